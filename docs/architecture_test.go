package docs_test

import (
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
)

const module = "github.com/stagehand-gitops/stagehand/"

// layering is ARCHITECTURE.md's import graph as rules: a package matching
// from may not import a package matching any of its forbidden prefixes.
// Prefixes end in "/" for a tree, or name one package exactly.
var layering = []struct {
	from      string
	forbidden []string
	why       string
}{
	{"pkg/", []string{"internal/", "cmd/", "hack/"}, "pkg/ takes only its own types, so it is usable outside this module"},
	{"pkg/workload", []string{"pkg/"}, "the workload kinds know no plan, lock, registry or manifest: pkg/reconcile plans and applies over them"},
	{"pkg/registry", []string{"pkg/"}, "resolving tags knows no plan, workload kind or manifest: pkg/reconcile asks it with the pull contexts it found"},
	{"internal/approval", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire"}, "the approval contract sits below every approval path"},
	{"internal/status", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot"}, "status is what the daemon writes and the API serves"},
	{"internal/wire", []string{"internal/daemon", "internal/api", "internal/cli", "internal/prbot", "internal/approval", "internal/ui", "internal/notify"}, "the builder builds parts (clients, GitHub, the authenticator) for the components that run them, and imports none of those"},
	{"internal/config", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire"}, "configuration is read by everyone and reads no component"},
	{"internal/daemon", []string{"internal/api", "internal/github", "internal/cli", "internal/prbot"}, "the daemon meets the API and GitHub only through approval.Decider, approval.Gate and api.Backend"},
	{"internal/daemon", []string{"internal/wire", "internal/webhook"}, "the daemon takes built parts (daemon.With…): internal/wire builds them once per process, and pushes reach it through daemon.Pushes"},
	{"internal/api", []string{"internal/daemon", "internal/github", "internal/cli", "internal/prbot"}, "the API serves any api.Backend"},
	{"internal/github", []string{"internal/daemon", "internal/api", "internal/cli", "internal/prbot"}, "GitHub decides through approval.Decider"},
	{"internal/github", []string{"internal/wire"}, "internal/wire builds the GitHub client; PR previews (internal/github/preview) get their sources from it as a preview.SourceFunc"},
	{"internal/prbot", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli"}, "prbot is its own binary's component"},
	{"internal/rollback", []string{"internal/daemon", "internal/github", "internal/cli", "internal/wire", "internal/ui", "internal/notify"}, "the rollbacker asks the reconciler through rollback.Reconciler and gets its pull-request bot and lock service built"},
	{"internal/keyless", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/wire"}, "the keyless bump API is a door of prbot serve: it verifies through internal/auth/oidc and bumps through internal/prbot"},
	{"internal/prbot/promoter", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/wire", "internal/keyless"}, "the promotion loop asks the bot and hears webhooks, and knows no other door"},
	{"internal/prbot/remote", []string{"internal/prbot", "internal/prbot/promoter", "internal/keyless", "internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/wire"}, "the repository on GitHub sits below the bot's flows, which decide with it; it knows no flow and no door"},
	{"internal/prbot/prbottest", []string{"internal/prbot"}, "the test world of the bot is below the bot, so the bot's own tests use it"},
	{"internal/prbot", []string{"internal/keyless"}, "the bot knows no door in front of it; internal/keyless asks it"},
	{"internal/keyless/bumpclient", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/wire", "internal/auth"}, "the keyless bump client talks to prbot serve over HTTP with prbot's types, and knows nothing of the reconciler"},
	{"internal/auth/login", []string{"internal/"}, "a login knows GitHub's device flow and a token file, and no component"},
	{"internal/ui", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire"}, "the web page reads through ui.Backend and decides through approval.Decider, as the API does"},
	{"internal/notify", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire"}, "a notification sink is a gate: it hears the daemon through approval.Gate"},
	{"internal/sequence", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/notify", "internal/approval"}, "the sequence contract sits below the daemon that runs it, the tasks and the listeners"},
	{"internal/webhook", []string{"internal/"}, "the receiver knows no component"},
	{"internal/httpserve", []string{"internal/"}, "how a binary serves HTTP (limits, the error body) sits below every door, so every door may import it"},
	{"internal/tracing", []string{"internal/"}, "how a process traces its work sits below every door and step it traces, so every one may import it"},
	{"internal/policy", []string{"internal/"}, "approval rules are judged below the configuration that compiles them and the daemon that asks them"},
	{"internal/clock", []string{"internal/"}, "where time comes from sits below every component"},
	{"internal/identity", []string{"internal/"}, "who someone is sits below every door and every rule that compares people"},
	{"internal/version", []string{"internal/"}, "which build runs is known to every binary without knowing any component"},
	{"internal/ghapp", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/config", "internal/approval", "internal/ui", "internal/notify"}, "the App's tokens sit below both their users, the GitHub client and the git source's builder"},
	{"internal/auth", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/approval"}, "who is calling is decided below the API; the approver policy comes in as an interface"},
	{"internal/state", []string{"internal/lease", "internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/gitserver", "internal/githubtest"}, "the state store keeps the daemon's records and knows no component; its tests start nothing"},
	{"internal/lease", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/gitserver", "internal/githubtest"}, "who works which environment knows no component; what runs while one is held is the caller's; its tests start nothing"},
	{"internal/envresource", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify"}, "the Environment writer is fed the daemon's view through daemon.RecordHook, which internal/cli wires"},
	{"internal/dora", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify"}, "the DORA figures are computed from the history any door reads, and counted through daemon.RecordHook, which internal/cli wires"},
	{"internal/promotion", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify"}, "what a promotion waits for is pkg/promote's judgement over records any door reads"},
	{"internal/waiter", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify"}, "a wait judges views, whoever reads them (the API client, a kubeconfig)"},
	{"internal/delivery", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/outbox", "internal/window"}, "the run of a delivery sequence is a room the daemon's worker drives: it is given its store, runners and listener"},
	{"internal/outbox", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/delivery", "internal/window"}, "the outcomes a gate refused are kept and reported by a room the daemon's worker drives: it is given its store, gate and counter"},
	{"internal/window", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/delivery", "internal/outbox"}, "deploy windows are a room the daemon's worker asks: it is given its calendar, clock, store and gate"},
	{"internal/tally", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/delivery", "internal/outbox", "internal/window"}, "approvals are counted by a room the daemon's worker asks: it is given the policy, the authors, the locks and the GitHub approver check"},
	{"internal/revert", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/rollback", "internal/delivery", "internal/outbox", "internal/window", "internal/tally"}, "the rollback of a failed apply is a room the daemon's worker drives: it is given its store, the restore, the gate's report and the hook"},
	{"internal/meter", []string{"internal/daemon", "internal/lease", "internal/state", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv"}, "the metrics are counted by the daemon, which owns them: they know no component, and their tests start nothing"},
	{"internal/herald", []string{"internal/daemon", "internal/lease", "internal/state", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv"}, "what the gate is told is a room the daemon's worker drives: it is given the gate, the outbox and the metrics, and its tests start nothing"},
	{"internal/pass", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/gate", "internal/deploy", "internal/release", "internal/decision"}, "what a pass is made of sits below the worker and the rooms that hold its steps: it runs nothing, and its tests start nothing"},
	{"internal/release", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/gate", "internal/deploy", "internal/decision"}, "the release approval is a room the daemon's worker drives: it is given its store, sequence run, gate and the worker's passes, and the steps that wait for it sit above it"},
	{"internal/deploy", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/gate", "internal/decision"}, "the apply, verify, release and record steps are a room the daemon's worker drives: it is given its store, reconciler, grace and rollback, and the gate step that lets an apply through sits above it"},
	{"internal/decision", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv"}, "the decisions on a pending plan are a room the daemon's worker drives: it is given its store, source, policy counter, windows, the release approval, the gate step and the worker's passes; the dispatcher that brings it decisions stays in the daemon"},
	{"internal/gate", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv", "internal/decision"}, "the gate step is a room the daemon's worker drives: it is given its store, policy counter, windows, gate and the worker's passes"},
	{"internal/view", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/testenv"}, "what the doors read of the environments is answered from the records and parts it is given: it knows no component, and its tests start nothing"},
	{"internal/wake", []string{"internal/daemon", "internal/lease", "internal/api", "internal/github", "internal/cli", "internal/prbot", "internal/wire", "internal/ui", "internal/notify", "internal/webhook"}, "wake-ups are rung and watched on the state cluster, for whoever polls"},
	{"internal/cli/command", []string{"internal/cli/bot", "internal/cli/locks", "internal/daemon", "internal/wire", "internal/prbot", "internal/github"}, "what both binaries' commands share sits below the commands and builds nothing"},
	{"internal/cli/bot", []string{"internal/cli/locks", "internal/daemon", "internal/github", "internal/ui", "internal/notify"}, "prbot's commands compose prbot's parts; internal/cli composes them into the binary"},
	{"internal/cli/authoring", []string{"internal/cli/bot", "internal/cli/locks", "internal/daemon", "internal/api", "internal/github", "internal/prbot", "internal/ui", "internal/notify"}, "the authoring commands read a checkout and a plan file, no cluster and no API"},
	{"internal/cli/locks", []string{"internal/cli/bot", "internal/daemon", "internal/github", "internal/prbot", "internal/ui", "internal/notify"}, "the lock commands talk to the API's locks or to the Lock objects, nothing of the reconciler"},
	{"internal/testenv", []string{"internal/daemon", "internal/api", "internal/github", "internal/cli", "internal/prbot", "pkg/"}, "test servers stand under everything"},
}

// foundations are the packages every package under internal/ may import,
// whatever its rule forbids: each imports nothing of internal/ itself (its
// own rule in layering), so importing it joins no component.
var foundations = []string{"internal/httpserve", "internal/tracing"}

// TestImportLayering keeps the import graph that ARCHITECTURE.md draws: it
// reads the imports of every non-test Go file and fails on an import that
// crosses a layer the wrong way.
func TestImportLayering(t *testing.T) {
	imports := moduleImports(t, "..")
	if len(imports) < 10 {
		t.Fatalf("found only %d packages under the repository root; is the test run from docs/?", len(imports))
	}
	if bad := layeringViolations(imports); len(bad) > 0 {
		t.Errorf("imports against ARCHITECTURE.md's layering:\n%s", strings.Join(bad, "\n"))
	}
}

// layeringViolations lists, sorted, each import of imports that a rule of
// layering forbids.
func layeringViolations(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		for _, rule := range layering {
			if !matches(pkg, rule.from) {
				continue
			}
			for _, dep := range deps {
				if foundation(pkg, dep) {
					continue
				}
				for _, f := range rule.forbidden {
					if matches(dep, f) && dep != pkg {
						bad = append(bad, pkg+" imports "+dep+": "+rule.why)
					}
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// foundation says whether pkg may import dep whatever pkg's rules say: dep
// is one of foundations and pkg lies under internal/ (pkg/ still imports
// nothing of internal/).
func foundation(pkg, dep string) bool {
	if !matches(pkg, "internal/") {
		return false
	}
	for _, f := range foundations {
		if dep == f {
			return true
		}
	}
	return false
}

// TestFoundations: a foundation may be imported by any package under
// internal/, even one whose rule forbids all of internal/, but not from
// pkg/; a foundation importing a component, or a package importing another
// part of internal/, is still caught.
func TestFoundations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{name: "the webhook receiver serves through httpserve", imports: map[string][]string{"internal/webhook": {"internal/httpserve"}}},
		{name: "httpserve's test helper", imports: map[string][]string{"internal/httpserve/httpservetest": {"internal/httpserve"}}},
		{name: "the webhook receiver importing a component", imports: map[string][]string{"internal/webhook": {"internal/httpserve", "internal/config"}},
			want: []string{"internal/webhook imports internal/config: the receiver knows no component"}},
		{name: "httpserve importing a component", imports: map[string][]string{"internal/httpserve": {"internal/approval"}},
			want: []string{"internal/httpserve imports internal/approval: how a binary serves HTTP (limits, the error body) sits below every door, so every door may import it"}},
		{name: "pkg/ importing httpserve", imports: map[string][]string{"pkg/lock": {"internal/httpserve"}},
			want: []string{"pkg/lock imports internal/httpserve: pkg/ takes only its own types, so it is usable outside this module"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, layeringViolations(tc.imports)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// pureRooms are the packages whose tests start nothing: `go test` of them on
// a fresh clone builds and starts no control plane or other test server.
var pureRooms = []string{"internal/state", "internal/lease", "internal/delivery", "internal/outbox", "internal/window", "internal/tally", "internal/revert", "internal/wake", "internal/meter", "pkg/workload", "pkg/registry", "internal/view", "internal/herald", "internal/pass", "internal/gate", "internal/deploy", "internal/release", "internal/decision"}

// testServers are the packages that start a server for tests.
var testServers = []string{"internal/testenv", "internal/gitserver", "internal/githubtest", "internal/registrytest", "internal/promtest", "internal/oidctest"}

// TestPureRoomsStartNothing: no file of a pure room, its tests included,
// imports a test server.
func TestPureRoomsStartNothing(t *testing.T) {
	fset := token.NewFileSet()
	for _, room := range pureRooms {
		files, err := filepath.Glob(filepath.Join("..", room, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s holds no Go file", room)
		}
		for _, path := range files {
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				for _, server := range testServers {
					if matches(strings.TrimPrefix(p, module), server) {
						t.Errorf("%s imports %s: %s's tests must start nothing (tests on a real API server belong to internal/daemon)", filepath.ToSlash(path), p, room)
					}
				}
			}
		}
	}
}

// TestImportLayeringCatches makes sure the rules bite: a pkg/ package that
// imported internal/config would be reported.
func TestImportLayeringCatches(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport _ \"" + module + "internal/config\"\n"
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "x", "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := moduleImports(t, dir)
	if deps := got["pkg/x"]; len(deps) != 1 || deps[0] != "internal/config" || !matches("pkg/x", "pkg/") || !matches(deps[0], "internal/") {
		t.Fatalf("moduleImports = %v, want pkg/x importing internal/config", got)
	}
}

// matches reports whether pkg is the package prefix names, or lies under it
// when prefix ends in "/".
func matches(pkg, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix)
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// moduleImports maps each package directory under root (module-relative,
// e.g. "internal/api") to the module packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(p, module); ok {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoomsListed keeps ARCHITECTURE.md's room table true to the tree: every
// package under internal/ and pkg/ (test-only ones included) is named in it
// as `internal/x` or `pkg/x`, and every package it names exists.
func TestRoomsListed(t *testing.T) {
	doc, err := os.ReadFile("../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rooms, ok := strings.Cut(string(doc), "## The rooms")
	if !ok {
		t.Fatal(`ARCHITECTURE.md has no "## The rooms" section`)
	}
	rooms, _, _ = strings.Cut(rooms, "\n## ")
	named := map[string]bool{}
	for _, m := range roomRE.FindAllStringSubmatch(rooms, -1) {
		named[m[1]] = true
	}
	pkgs := map[string]bool{}
	for _, top := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join("..", top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") {
				rel, err := filepath.Rel("..", filepath.Dir(path))
				if err != nil {
					return err
				}
				pkgs[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var missing, stale []string
	for p := range pkgs {
		// A package under another (pkg/lock/crd) is its room's.
		if !named[p] && !named[parentRoom(p, named)] {
			missing = append(missing, p)
		}
	}
	for p := range named {
		if !pkgs[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("packages missing from ARCHITECTURE.md's room table: %s", strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		t.Errorf("ARCHITECTURE.md's room table names packages that do not exist: %s", strings.Join(stale, ", "))
	}
}

// roomRE finds a package named in backquotes: `internal/api`, `pkg/lock`.
var roomRE = regexp.MustCompile("`((?:internal|pkg)/[a-z0-9]+(?:/[a-z0-9]+)*)`")

// parentRoom is the nearest named ancestor of p, or "".
func parentRoom(p string, named map[string]bool) string {
	for i := strings.LastIndex(p, "/"); i > 0; i = strings.LastIndex(p[:i], "/") {
		if named[p[:i]] {
			return p[:i]
		}
	}
	return ""
}

// cliBuildsNothing are the calls internal/cli may not make: its commands get
// their Kubernetes clients, GitHub client, transports and authenticator from
// internal/wire's Builder (one per process), and call the API through
// api.Client.
var cliBuildsNothing = []string{"kubernetes.NewForConfig", "github.NewClient", "wire.NewClients", "http.DefaultClient", "http.DefaultTransport", "auth.New("}

// TestCLIBuildsNoClient: no non-test file of internal/cli, or of the
// packages of commands under it (internal/cli/bot, internal/cli/locks,
// internal/cli/command, internal/cli/authoring), builds a client itself.
// internal/cli/clitest is test infrastructure, as its tests are: it builds
// the daemon and API a command's test talks to.
func TestCLIBuildsNoClient(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "internal", "cli", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("internal/cli: %v, %d files", err, len(files))
	}
	under, err := filepath.Glob(filepath.Join("..", "internal", "cli", "*", "*.go"))
	if err != nil || len(under) == 0 {
		t.Fatalf("internal/cli/*: %v, %d files", err, len(under))
	}
	files = append(files, under...)
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || filepath.Base(filepath.Dir(path)) == "clitest" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range cliBuildsNothing {
			if strings.Contains(string(b), call) {
				t.Errorf("%s calls %s: the builder (internal/wire) builds clients and the authenticator, once per process", filepath.ToSlash(path), call)
			}
		}
	}
}
