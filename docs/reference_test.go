package docs_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/reference"
)

// TestReferenceGenerated fails when a generated page under docs/reference
// (the commands and flags, the metrics) is not what the code says now.
func TestReferenceGenerated(t *testing.T) {
	pages, err := reference.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range pages {
		t.Run(path, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join("..", path))
			if err != nil {
				t.Fatalf("%v: run make docs-gen", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run make docs-gen (or go generate ./docs) and commit it (-generated +file):\n%s",
					path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}

// TestMetricsFound checks that the metrics reference finds the metrics each
// way of defining one reads: a *Opts literal, a Vec's labels, constant
// labels, and a Desc of a custom collector.
func TestMetricsFound(t *testing.T) {
	ms, err := reference.Metrics("..")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = m.Type + " " + strings.Join(m.Labels, ",")
	}
	for name, want := range map[string]string{
		"stagehand_reconcile_duration_seconds": "histogram environment,result",
		"stagehand_leader":                     "gauge ",
		"stagehand_build_info":                 "gauge commit,goversion,version",
		"stagehand_revision_age_seconds":       "gauge environment",
		"stagehand_source_errors_total":        "counter ",
		"stagehand_notifications_total":        "counter sink,result",
		"stagehand_github_requests_total":      "counter code",
	} {
		if got[name] != want {
			t.Errorf("metric %s: got %q, want %q", name, got[name], want)
		}
	}
}

// notUserRooms are the test servers and test-only rooms: errors a user can
// meet are defined in every other package under internal/ and pkg/.
var notUserRooms = []string{"internal/testenv", "internal/gitserver", "internal/githubtest", "internal/registrytest",
	"internal/oidctest", "internal/promtest", "internal/faults", "internal/chart", "internal/state/statetest"}

// exportedErrors lists pkg.Name of every exported error value (var ErrX =
// ...) and error type (a type with an Error() string method) under root.
func exportedErrors(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, dir := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			for _, r := range notUserRooms {
				if d.IsDir() && rel == r {
					return filepath.SkipDir
				}
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			pkg := f.Name.Name
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.GenDecl:
					if decl.Tok != token.VAR {
						continue
					}
					for _, s := range decl.Specs {
						for _, n := range s.(*ast.ValueSpec).Names {
							if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
								seen[pkg+"."+n.Name] = true
							}
						}
					}
				case *ast.FuncDecl:
					if decl.Recv == nil || decl.Name.Name != "Error" || decl.Type.Params.NumFields() != 0 {
						continue
					}
					typ := decl.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
						seen[pkg+"."+id.Name] = true
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var headingErrors = regexp.MustCompile("`([a-z]+\\.[A-Z][A-Za-z]*)`")

// TestErrorsDocumented holds docs/reference/errors.md to the code: every
// exported error of internal/ and pkg/ is named in one of its "### "
// headings (which say what the user sees and what to do), and every error a
// heading names exists.
func TestErrorsDocumented(t *testing.T) {
	b, err := os.ReadFile("reference/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "### ") {
			continue
		}
		for _, m := range headingErrors.FindAllStringSubmatch(line, -1) {
			documented = append(documented, m[1])
		}
	}
	sort.Strings(documented)
	if diff := cmp.Diff(exportedErrors(t, ".."), documented); diff != "" {
		t.Errorf("docs/reference/errors.md's \"### `pkg.Error`\" headings differ from the errors the code defines (-code +docs); "+
			"give each error a heading saying what the user sees, why, and what to do:\n%s", diff)
	}
}

var statusRow = regexp.MustCompile(`^\| (\d{3}) \|`)

// TestAPIStatusesDocumented fails when the API answers an error status that
// docs/reference/errors.md's table of statuses does not explain.
func TestAPIStatusesDocumented(t *testing.T) {
	b, err := os.ReadFile("reference/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[int]bool{}
	for line := range strings.Lines(string(b)) {
		if m := statusRow.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			documented[n] = true
		}
	}
	codes := map[string]int{"StatusBadRequest": 400, "StatusUnauthorized": 401, "StatusForbidden": 403,
		"StatusNotFound": 404, "StatusMethodNotAllowed": 405, "StatusConflict": 409, "StatusRequestEntityTooLarge": 413,
		"StatusUnsupportedMediaType": 415, "StatusLocked": 423, "StatusTooManyRequests": 429,
		"StatusInternalServerError": 500, "StatusNotImplemented": 501, "StatusServiceUnavailable": 503}
	used := regexp.MustCompile(`http\.(Status[A-Za-z]+)`)
	for _, dir := range []string{"../internal/api", "../internal/auth", "../pkg/lock"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range used.FindAllStringSubmatch(string(src), -1) {
				code, isError := codes[m[1]]
				if isError && !documented[code] {
					t.Errorf("%s answers %d (http.%s), which docs/reference/errors.md's status table does not explain: add a row | %d | ... |",
						f, code, m[1], code)
				}
			}
		}
	}
}
