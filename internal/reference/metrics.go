package reference

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Metric is one Prometheus metric defined in the source.
type Metric struct {
	Name   string
	Type   string // counter, gauge, histogram or summary
	Help   string
	Labels []string // variable labels, then constant ones
	Pkg    string   // the package that defines it, relative to the module root
}

// constructors maps prometheus' constructors to the type of metric they make.
var constructors = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter", "NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram", "NewSummary": "summary", "NewSummaryVec": "summary",
	"NewDesc": "",
}

// Metrics reads every metric defined under root's internal/ and pkg/ (test
// files and test servers left out): the Opts of prometheus.New<Type>[Vec]
// calls and prometheus.NewDesc calls, whose arguments must be constants
// written in place so that the page can name them. A custom collector's
// type is read from its name: _total a counter, otherwise a gauge.
func Metrics(root string) ([]Metric, error) {
	var out []Metric
	for _, dir := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			ms, err := fileMetrics(path, filepath.ToSlash(rel))
			out = append(out, ms...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading metrics under %s: %w", dir, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// testRooms define metrics of the exporters tests scrape, not Stagehand's.
var testRooms = map[string]bool{"internal/promtest": true}

func fileMetrics(path, pkg string) ([]Metric, error) {
	if testRooms[pkg] {
		return nil, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	var out []Metric
	var bad error
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || bad != nil {
			return bad == nil
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
			return true
		}
		typ, ok := constructors[sel.Sel.Name]
		if !ok {
			return true
		}
		m := Metric{Type: typ, Pkg: pkg}
		if sel.Sel.Name == "NewDesc" {
			if len(call.Args) != 4 {
				return true
			}
			m.Name, _ = str(call.Args[0])
			m.Help, _ = str(call.Args[1])
			m.Labels = append(strs(call.Args[2]), keys(call.Args[3])...)
			m.Type = "gauge"
			if strings.HasSuffix(m.Name, "_total") {
				m.Type = "counter"
			}
		} else {
			lit, ok := unaddr(call.Args[0]).(*ast.CompositeLit)
			if !ok {
				return true
			}
			var constLabels []string
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch k := kv.Key.(*ast.Ident); {
				case k == nil:
				case k.Name == "Name":
					m.Name, _ = str(kv.Value)
				case k.Name == "Help":
					m.Help, _ = str(kv.Value)
				case k.Name == "ConstLabels":
					constLabels = keys(kv.Value)
				}
			}
			if len(call.Args) > 1 {
				m.Labels = strs(call.Args[1])
			}
			m.Labels = append(m.Labels, constLabels...)
		}
		if m.Name == "" || m.Help == "" {
			bad = fmt.Errorf("%s: a prometheus.%s whose name or help is not a constant written in place: the metrics reference cannot name it", path, sel.Sel.Name)
			return false
		}
		out = append(out, m)
		return true
	})
	return out, bad
}

func unaddr(e ast.Expr) ast.Expr {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		return u.X
	}
	return e
}

// str evaluates a string literal or a sum of them.
func str(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := str(e.X)
		b, ok2 := str(e.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return str(e.X)
	}
	return "", false
}

// strs reads a []string{...} literal.
func strs(e ast.Expr) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		if s, ok := str(el); ok {
			out = append(out, s)
		}
	}
	return out
}

// keys reads the keys of a prometheus.Labels{...} literal.
func keys(e ast.Expr) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if s, ok := str(kv.Key); ok {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// MetricsPage writes the metrics reference from ms.
func MetricsPage(w io.Writer, ms []Metric) error {
	p := &printer{w: w}
	p.line("# Metrics")
	p.line("")
	p.line("<!-- Generated by `make docs-gen` from the metric definitions under internal/ and pkg/; do not edit. -->")
	p.line("")
	p.line("`reconciler run` serves these at `GET /metrics` on `server.listen` (Prometheus text format), beside the")
	p.line("Go runtime's `go_*` and the process's `process_*` metrics. Each is defined once, in the package named;")
	p.line("a label list shows the labels every series carries.")
	p.line("")
	p.line("| metric | type | labels | what it measures | defined in |")
	p.line("|---|---|---|---|---|")
	for _, m := range ms {
		labels := make([]string, len(m.Labels))
		for i, l := range m.Labels {
			labels[i] = "`" + l + "`"
		}
		p.line(fmt.Sprintf("| `%s` | %s | %s | %s | `%s` |", m.Name, m.Type, strings.Join(labels, ", "), cell(m.Help), m.Pkg))
	}
	return p.err
}
