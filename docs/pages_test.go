package docs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/chart"
	"github.com/stagehand-gitops/stagehand/internal/cli"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// repoURL is where links to files outside docs/ point (mkdocs builds docs/ alone); such links are
// checked against the working tree.
const repoURL = "https://github.com/stagehand-gitops/stagehand/blob/main/"

// page is one Markdown file of the documentation.
type page struct {
	path   string // relative to the repository root, slash-separated
	text   string
	blocks []block
}

// block is a fenced code block, with the marker of the HTML comment on the line before it, if any
// (<!-- reconciler.yaml -->), which names the loader that must accept it.
type block struct {
	line   int
	info   string // the fence's info string: yaml, json, sh, text…
	marker string
	body   string
	// run is how a shell block is run by TestRunnableBlocks: "runnable", or "not-runnable" with the reason
	// (<!-- runnable -->, <!-- not-runnable: REASON -->); "" when the line before the block says neither.
	run, reason string
}

// pages reads README.md, ARCHITECTURE.md and every Markdown file under docs/.
func pages(t *testing.T) []page {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md"}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, "docs/"+filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []page
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsePage(f, string(b)))
	}
	return out
}

var (
	markerLine      = regexp.MustCompile(`^<!--\s*([a-zA-Z.\-]+)\s*-->$`)
	notRunnableLine = regexp.MustCompile(`^<!--\s*not-runnable:\s*(.*?)\s*-->$`)
)

func parsePage(file, text string) page {
	p := page{path: file, text: text}
	var cur *block
	var fence, prev string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:strings.LastIndex(trimmed, "`")+1]
			cur = &block{line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(trimmed, fence))}
			if m := markerLine.FindStringSubmatch(prev); m != nil && m[1] == runnable {
				cur.run = runnable
			} else if m != nil {
				cur.marker = m[1]
			} else if m := notRunnableLine.FindStringSubmatch(prev); m != nil {
				cur.run, cur.reason = notRunnable, m[1]
			}
		case cur != nil && trimmed == fence:
			p.blocks = append(p.blocks, *cur)
			cur = nil
		case cur != nil:
			indent := len(line) - len(strings.TrimLeft(line, " "))
			cur.body += line[min(indent, blockIndent(text, cur.line)):] + "\n"
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	return p
}

// blockIndent is the indentation of the fence opening at line (1-based): a block inside a list item
// is indented as a whole.
func blockIndent(text string, line int) int {
	l := strings.Split(text, "\n")[line-1]
	return len(l) - len(strings.TrimLeft(l, " "))
}

// prose is the page without its code blocks and inline code, where links are looked for.
func (p page) prose() string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(p.text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			b.WriteString("\n")
			continue
		}
		if !in {
			b.WriteString(inlineCode.ReplaceAllString(line, "``"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// anchors returns the ids both GitHub and mkdocs give the page's headings: a link may use only an id
// both agree on.
func (p page) anchors() map[string]bool {
	gh, mk := map[string]int{}, map[string]int{}
	out := map[string]bool{}
	for _, line := range strings.Split(p.prose(), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		title := strings.ReplaceAll(m[2], "``", "")
		title = inlineCodeText(p.text, line, title)
		g, k := githubSlug(title), mkdocsSlug(title)
		if n := gh[g]; n > 0 {
			g = fmt.Sprintf("%s-%d", g, n)
		}
		gh[githubSlug(title)]++
		if n := mk[k]; n > 0 {
			k = fmt.Sprintf("%s_%d", k, n)
		}
		mk[mkdocsSlug(title)]++
		if g == k {
			out[g] = true
		}
	}
	return out
}

// inlineCodeText puts back the text of inline code that prose() emptied, from the original line.
func inlineCodeText(text, proseLine, title string) string {
	for _, l := range strings.Split(text, "\n") {
		if inlineCode.ReplaceAllString(l, "``") == proseLine {
			m := heading.FindStringSubmatch(l)
			if m != nil {
				return strings.ReplaceAll(m[2], "`", "")
			}
		}
	}
	return title
}

// githubSlug is GitHub's heading id: lower case, punctuation but - and _ dropped, spaces to -.
func githubSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mkdocsSlug is Python-Markdown's toc slugify: ASCII only, punctuation but - and _ dropped, runs of
// spaces and - to one -.
func mkdocsSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r < 128 && (r == ' ' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	out := regexp.MustCompile(`[-\s]+`).ReplaceAllString(strings.TrimSpace(b.String()), "-")
	return out
}

// TestLinks checks every link of the documentation: a relative link names a file that exists (inside
// docs/ for a page under docs/, so the site has it), a link into the repository on GitHub names a file
// of the working tree, and an anchor names a heading of its page.
func TestLinks(t *testing.T) {
	all := pages(t)
	byPath := map[string]page{}
	for _, p := range all {
		byPath[p.path] = p
	}
	var bad []string
	for _, p := range all {
		for _, m := range link.FindAllStringSubmatch(p.prose(), -1) {
			target := m[1]
			var file, anchor string
			switch {
			case strings.HasPrefix(target, repoURL):
				file, anchor, _ = strings.Cut(strings.TrimPrefix(target, repoURL), "#")
			case strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:"):
				continue
			case strings.HasPrefix(target, "#"):
				file, anchor = p.path, target[1:]
			default:
				var rel string
				rel, anchor, _ = strings.Cut(target, "#")
				file = path.Clean(path.Join(path.Dir(p.path), rel))
				if strings.HasPrefix(p.path, "docs/") && !strings.HasPrefix(file, "docs/") {
					bad = append(bad, fmt.Sprintf("%s: link %s leaves docs/, which the site does not have: link %s%s instead", p.path, target, repoURL, file))
					continue
				}
			}
			st, err := os.Stat(filepath.Join("..", filepath.FromSlash(strings.TrimSuffix(file, "/"))))
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: link %s: no file %s", p.path, target, file))
				continue
			}
			if anchor == "" {
				continue
			}
			q, ok := byPath[file]
			if !ok && !st.IsDir() && strings.HasSuffix(file, ".md") {
				b, _ := os.ReadFile(filepath.Join("..", file))
				q, ok = parsePage(file, string(b)), true
			}
			if ok && !q.anchors()[anchor] {
				bad = append(bad, fmt.Sprintf("%s: link %s: %s has no heading with the id %q on both GitHub and the site", p.path, target, file, anchor))
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("broken links:\n%s", strings.Join(bad, "\n"))
	}
}

// TestLinkCheckerCatches keeps TestLinks honest: a missing file, a missing anchor and a link out of
// docs/ are found.
func TestLinkCheckerCatches(t *testing.T) {
	p := parsePage("docs/x.md", "# Title\n\n## Who you are\n\n[a](#who-you-are) [b](#nobody)\n")
	if a := p.anchors(); !a["who-you-are"] || a["nobody"] {
		t.Errorf("anchors = %v", a)
	}
	if got := mkdocsSlug("POST /api/v1/environments/{env}/approve"); got != "post-apiv1environmentsenvapprove" {
		t.Errorf("mkdocsSlug = %q", got)
	}
	if g, m := githubSlug("a — b"), mkdocsSlug("a — b"); g == m {
		t.Errorf("an em dash should give two ids (GitHub %q, mkdocs %q), so links to it are refused", g, m)
	}
}

// loaders parse a block marked with their name with the binaries' own parsers.
var loaders = map[string]func(t *testing.T, body string) error{
	"reconciler.yaml": func(_ *testing.T, body string) error { _, err := config.Parse([]byte(body)); return err },
	"pipeline.yaml": func(_ *testing.T, body string) error {
		_, err := promote.Parse("pipeline.yaml", []byte(body))
		return err
	},
	"manifest.json": loadManifest,
	"values":        loadValues,
	"kubernetes":    loadObjects,
}

// loadManifest resolves the block as environments/doc/manifest.json, its includes present and empty.
func loadManifest(_ *testing.T, body string) error {
	var m struct{ Includes []string }
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return err
	}
	fsys := fstest.MapFS{"environments/doc/manifest.json": {Data: []byte(body)}}
	for _, inc := range m.Includes {
		fsys[path.Join("environments/doc", inc)] = &fstest.MapFile{Data: []byte(`{"services": []}`)}
	}
	_, err := manifest.Resolve(context.Background(), manifest.Repo{FS: fsys, Root: "."}, "doc")
	return err
}

// loadValues renders the chart with the block as values (helm checks them against values.schema.json)
// and parses the reconciler.yaml it renders.
func loadValues(t *testing.T, body string) error {
	h, err := chart.Find(context.Background())
	if err != nil {
		t.Skipf("no helm to check the chart values (make helm): %v", err)
	}
	dir, err := chart.Dir()
	if err != nil {
		return err
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		return err
	}
	out, err := h.Template(context.Background(), chart.Release{Dir: dir, Name: "stagehand", Namespace: "stagehand"}, f)
	if err != nil {
		return err
	}
	objs, err := chart.Objects(out)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		if cfg, ok, _ := unstructuredString(o.Object, "data", "reconciler.yaml"); ok {
			if _, err := config.Parse([]byte(cfg)); err != nil {
				return fmt.Errorf("the rendered reconciler.yaml: %w", err)
			}
			return nil
		}
	}
	return fmt.Errorf("the chart rendered no reconciler.yaml")
}

func unstructuredString(o map[string]any, keys ...string) (string, bool, error) {
	var cur any = o
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// loadObjects reads Kubernetes objects: each must say its apiVersion, kind and name.
func loadObjects(_ *testing.T, body string) error {
	for _, doc := range strings.Split(body, "\n---\n") {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.UnmarshalStrict([]byte(doc), &o, yaml.DisallowUnknownFields); err != nil {
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				return err
			}
		}
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			return fmt.Errorf("an object without apiVersion, kind or metadata.name")
		}
	}
	return nil
}

// TestExamples parses every YAML and JSON block of the documentation: a block marked with a loader's
// name (<!-- reconciler.yaml -->, pipeline.yaml, manifest.json, values, kubernetes) with the binaries'
// own parser, every other as YAML or JSON, so that an example that no longer loads fails here.
func TestExamples(t *testing.T) {
	counts := map[string]int{}
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			name := fmt.Sprintf("%s:%d", p.path, b.line)
			if b.marker != "" {
				load, ok := loaders[b.marker]
				if !ok {
					t.Errorf("%s: marker %q names no loader (want one of %v)", name, b.marker, keysOf(loaders))
					continue
				}
				counts[b.marker]++
				t.Run(name, func(t *testing.T) {
					if err := load(t, b.body); err != nil {
						t.Errorf("the %s example does not load:\n%s\n%v", b.marker, b.body, err)
					}
				})
				continue
			}
			switch b.info {
			case "yaml":
				var v any
				if err := yaml.Unmarshal([]byte(b.body), &v); err != nil {
					t.Errorf("%s: the YAML example does not parse: %v", name, err)
				}
			case "json":
				if err := json.Unmarshal([]byte(b.body), new(any)); err != nil {
					t.Errorf("%s: the JSON example does not parse: %v", name, err)
				}
			}
		}
	}
	for marker := range loaders {
		if counts[marker] == 0 {
			t.Errorf("no example is marked <!-- %s -->: the loader checks nothing", marker)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestCommandLines runs every reconciler and prbot command line of the documentation's shell blocks
// through the binaries' own command trees, up to parsing its flags: a command or flag that does not
// exist (or no longer does) fails here. Nothing is executed.
func TestCommandLines(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			if b.info != "sh" && b.info != "bash" && b.info != "console" {
				continue
			}
			for i, line := range commandLines(b.body) {
				words := shellWords(line)
				bin, args := binary(words)
				if bin == "" {
					continue
				}
				n++
				if err := parseCommand(bin, args); err != nil {
					t.Errorf("%s:%d (command %d): %s: %v", p.path, b.line, i+1, line, err)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d command lines in the documentation's shell blocks", n)
	}
}

// commandLines joins continued lines and splits the block into simple commands (at ;, && and |).
func commandLines(body string) []string {
	body = strings.ReplaceAll(body, "\\\n", " ")
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		for _, part := range regexp.MustCompile(`\s*(?:&&|\|\||;|\|)\s*`).Split(line, -1) {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(part), " &"))
		}
	}
	return out
}

// shellWords splits a command line into words, minding quotes; $(…) and redirections are kept as words.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	depth := 0
	has := false
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, has = r, true
		case r == '(':
			depth++
			cur.WriteRune(r)
		case r == ')':
			depth--
			cur.WriteRune(r)
		case r == ' ' && depth == 0:
			if has || cur.Len() > 0 {
				words = append(words, cur.String())
			}
			cur.Reset()
			has = false
		default:
			cur.WriteRune(r)
		}
	}
	if has || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// binary finds which of the two binaries a command runs (reconciler, bin/reconciler, go run
// ./cmd/reconciler, and so for prbot), and its arguments.
func binary(words []string) (string, []string) {
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:] // VAR=value before the command
	}
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
		words = words[2:]
	}
	if len(words) == 0 {
		return "", nil
	}
	switch path.Base(strings.Split(words[0], "@")[0]) {
	case "reconciler":
		return "reconciler", words[1:]
	case "prbot":
		return "prbot", words[1:]
	}
	return "", nil
}

func parseCommand(bin string, args []string) error {
	root := cli.NewReconciler(io.Discard, io.Discard)
	if bin == "prbot" {
		root = cli.NewPrbot(io.Discard, io.Discard)
	}
	var kept []string
	for _, a := range args {
		if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") {
			break
		}
		kept = append(kept, a)
	}
	cmd, rest, err := root.Find(kept)
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no %s command named", bin)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return nil
}

// TestNavListsEveryPage fails when a page under docs/ is missing from mkdocs.yml's nav (the site would
// build it, but nobody would find it) or the nav names a page that does not exist.
func TestNavListsEveryPage(t *testing.T) {
	b, err := os.ReadFile("../mkdocs.yml")
	if err != nil {
		t.Fatal(err)
	}
	var site struct {
		Nav []any `json:"nav"`
	}
	if err := yaml.Unmarshal(b, &site); err != nil {
		t.Fatal(err)
	}
	var nav []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			nav = append(nav, "docs/"+v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(site.Nav)
	var files []string
	for _, p := range pages(t) {
		if strings.HasPrefix(p.path, "docs/") {
			files = append(files, p.path)
		}
	}
	sort.Strings(nav)
	sort.Strings(files)
	if diff := cmp.Diff(files, nav); diff != "" {
		t.Errorf("mkdocs.yml's nav differs from the pages under docs/ (-pages +nav):\n%s", diff)
	}
}
