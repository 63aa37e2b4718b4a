package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/internal/cli"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// stack is a reconciler running for a browser test: `reconciler run` on the
// real API server and git server, its page on a loopback address.
type stack struct {
	env  *testenv.Env
	git  *gitserver.Server
	ns   string // staging's and prod's namespaces are ns-staging's, ns
	base string // http://127.0.0.1:port
	// gate is the node label that lets prod's pods be scheduled: until the
	// test sets it on the fake node, a rollout in prod stays in progress.
	gate string
}

// manifests are staging (deploys without approval) and prod, both with web
// 2.0.0 and api 1.0.0, and a pipeline.yaml promoting staging to prod.
var manifests = map[string]string{
	"environments/staging/manifest.json": `{"skipConfirmation": true, "services": [
  {"name": "web", "containers": [{"dockerName": "web", "dockerTag": "2.0.0"}]},
  {"name": "api", "containers": [{"dockerName": "api", "dockerTag": "1.0.0"}]}]}`,
	"environments/prod/manifest.json": `{"includes": ["web.json"], "services": [
  {"name": "api", "containers": [{"dockerName": "api", "dockerTag": "1.0.0"}]}]}`,
	"environments/prod/web.json": `{"services": [
  {"name": "web", "containers": [{"dockerName": "web", "dockerTag": "2.0.0"}]}]}`,
	// The page orders its columns by the stages, not by name.
	"pipeline.yaml": "stages:\n  - name: staging\n    lockPath: apps/staging\n  - name: prod\n    promoteFrom: staging\n    lockPath: apps/prod\n",
}

// startStack runs the reconciler with server.ui set to uiConfig and more
// top-level configuration, and returns once its page answers. Files in
// files are written beside reconciler.yaml; mirror (when not nil) is told
// the manifests' commit before the reconciler starts.
func startStack(t *testing.T, uiConfig, more string, files map[string][]byte, mirror func(sha string)) *stack {
	t.Helper()
	return startStackWith(t, "", uiConfig, more, files, mirror)
}

// startStackWith is startStack with prodExtra added to prod's entry of environments (", windows: {…}").
func startStackWith(t *testing.T, prodExtra, uiConfig, more string, files map[string][]byte, mirror func(sha string)) *stack {
	t.Helper()
	env := cluster.Env(t)
	s := &stack{env: env, git: gitserver.New(t), ns: env.Namespace(t)}
	staging := env.Namespace(t)
	url := s.git.Init(t, "manifests")
	sha := s.git.Repo("manifests").Commit(t, "main", manifests, "staging and prod")
	if mirror != nil {
		mirror(sha)
	}
	s.gate = "stagehand.test/" + s.ns
	for _, d := range []struct{ ns, name, image string }{
		{staging, "web", "example.com/web:2.0.0"}, {staging, "api", "example.com/api:1.0.0"},
		{s.ns, "web", "example.com/web:1.0.0"}, {s.ns, "api", "example.com/api:1.0.0"},
	} {
		dep := testenv.Deployment(d.name, d.image)
		if d.ns == s.ns && d.name == "web" {
			dep.Spec.Template.Spec.NodeSelector = map[string]string{s.gate: "go"}
		}
		if _, err := env.Clientset.AppsV1().Deployments(d.ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q, interval: 1s}
environments:
  staging: {lockPath: apps/staging, targets: [{name: eu, kubeconfig: %q, namespace: %s}]}
  prod: {lockPath: apps/prod, targets: [{name: eu, kubeconfig: %q, namespace: %s}]%s}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 3m}
server:
  listen: %q
  ui: %s
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
%s`, url, filepath.Join(dir, "cache"), env.Kubeconfig, staging, env.Kubeconfig, s.ns, prodExtra, addr, uiConfig, s.ns, s.ns, env.Kubeconfig, more)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	cmd := cli.NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"run", "--config", path, "--log-level", "error", "--enable-leader-election=false"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("reconciler run: %v\n%s", err, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("reconciler run did not stop within 30s")
		}
	})
	s.base = "http://" + addr
	testenv.WaitFor(t, 30*time.Second, "the page at "+s.base, func() bool {
		resp, err := http.Get(s.base + "/signin")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// openGate lets prod's web pods be scheduled, so its rollout finishes.
func (s *stack) openGate(t *testing.T) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{s.gate: "go"}}})
	if _, err := s.env.Clientset.CoreV1().Nodes().Patch(context.Background(), testenv.FakeNodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{s.gate: nil}}})
		_, _ = s.env.Clientset.CoreV1().Nodes().Patch(context.Background(), testenv.FakeNodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	})
}

// matrix reads the overview's matrix from the DOM: service → environment →
// state, as the cells' data-state say.
func matrix(ctx context.Context) (map[string]map[string]string, error) {
	var m map[string]map[string]string
	err := chromedp.Run(ctx, chromedp.Evaluate(`(() => {
  const out = {};
  document.querySelectorAll("#matrix tbody tr").forEach(tr => {
    const row = out[tr.dataset.service] = {};
    tr.querySelectorAll("td").forEach(td => { row[td.dataset.env] = td.dataset.state; });
  });
  return out;
})()`, &m))
	return m, err
}

// waitMatrix waits until the matrix shows want for service in env, with
// no reload of the page (the marker set on window survives).
func waitMatrix(t *testing.T, ctx context.Context, service, env, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last map[string]map[string]string
	for time.Now().Before(deadline) {
		m, err := matrix(ctx)
		if err != nil {
			t.Fatalf("reading the matrix: %v", err)
		}
		if m[service][env] == want {
			return
		}
		last = m
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the matrix never showed %s %s in %s; last %v", service, want, env, last)
}

// screenshot saves the whole page as name.png in the test's artifact
// directory (go test -artifacts keeps it).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// text is the text content of the first element matching sel, waiting for it.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	if err := chromedp.Run(ctx, chromedp.Text(sel, &s, chromedp.ByQuery)); err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// notReloaded reports whether the page still has the marker set on it.
func notReloaded(t *testing.T, ctx context.Context) bool {
	t.Helper()
	var ok bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.stagehandMarker === 1`, &ok)); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestBrowser drives the page in headless Chromium against `reconciler run`
// on the real API server: the overview's matrix, the demo sign-in, an
// approval clicked on prod's plan that the overview shows rolling out and
// then in sync without a reload, a lock taken and removed, and a search.
func TestBrowser(t *testing.T) {
	s := startStack(t, "{demoLogin: demo}", "", nil, nil)
	ctx := browse(t, 1280, 900)

	run(t, ctx, "signing in", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#signin-demo", chromedp.ByID),
		chromedp.Click("#signin-demo", chromedp.ByID), chromedp.WaitVisible("#login", chromedp.ByID))
	if got := text(t, ctx, "#login"); got != "demo" {
		t.Errorf("signed in as %q, want demo", got)
	}
	// Over plain HTTP to 127.0.0.1 (the demo login) Chromium keeps the __Host- session cookie: Secure, for
	// Path=/ and this host only.
	var cookies []*network.Cookie
	run(t, ctx, "reading the browser's cookies", chromedp.ActionFunc(func(ctx context.Context) (err error) {
		cookies, err = network.GetCookies().WithURLs([]string{s.base + "/"}).Do(ctx)
		return err
	}))
	var session []string
	for _, c := range cookies {
		session = append(session, fmt.Sprintf("%s secure=%v httpOnly=%v path=%s sameSite=%s", c.Name, c.Secure, c.HTTPOnly, c.Path, c.SameSite))
	}
	if want := []string{"__Host-stagehand_session secure=true httpOnly=true path=/ sameSite=Lax"}; fmt.Sprint(session) != fmt.Sprint(want) {
		t.Errorf("the browser's cookies after signing in: %q, want %q", session, want)
	}
	run(t, ctx, "marking the page", chromedp.Evaluate(`window.stagehandMarker = 1`, nil))
	// The first plans arrive after the page was loaded: the live updates bring them.
	waitMatrix(t, ctx, "web", "prod", "pending")
	waitMatrix(t, ctx, "api", "prod", "in sync")
	m, err := matrix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"api": {"staging": "in sync", "prod": "in sync"}, "web": {"staging": "in sync", "prod": "pending"}}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("matrix %v, want %v", m, want)
	}
	if !notReloaded(t, ctx) {
		t.Error("the overview was reloaded; live updates should have brought the plans")
	}
	var columns []string
	run(t, ctx, "reading the columns", chromedp.Evaluate(`[...document.querySelectorAll("#matrix thead th[data-env]")].map(th => th.dataset.env)`, &columns))
	if fmt.Sprint(columns) != "[staging prod]" {
		t.Errorf("columns %v, want pipeline.yaml's stage order [staging prod]", columns)
	}
	if got := text(t, ctx, `#matrix tr[data-service="web"] td[data-env="prod"] .target`); !strings.Contains(got, "eu: 1.0.0 → 2.0.0") {
		t.Errorf("prod's web cell says %q, want eu: 1.0.0 → 2.0.0", got)
	}
	screenshot(t, ctx, "overview")

	// The environment page: the plan, approved by clicking.
	run(t, ctx, "opening prod", chromedp.Click(`th[data-env="prod"] a`, chromedp.ByQuery), chromedp.WaitVisible("#approve", chromedp.ByID))
	if got := text(t, ctx, "#plan table"); !strings.Contains(got, "web") || !strings.Contains(got, "1.0.0 → 2.0.0") || !strings.Contains(got, "Deployment/web") {
		t.Errorf("prod's plan table: %q", got)
	}
	if got := text(t, ctx, "#layout"); !strings.Contains(got, "environments/prod/web.json") {
		t.Errorf("prod's layout tree: %q", got)
	}
	screenshot(t, ctx, "environment")
	run(t, ctx, "approving", chromedp.Click("#approve", chromedp.ByID), chromedp.WaitVisible("#flash", chromedp.ByID))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Approved by demo: applying revision") {
		t.Errorf("after Approve: %q", got)
	}

	// The overview shows the rollout, then its end, without a reload.
	run(t, ctx, "back to the overview", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#matrix", chromedp.ByID),
		chromedp.Evaluate(`window.stagehandMarker = 1`, nil))
	waitMatrix(t, ctx, "web", "prod", "rolling out")
	screenshot(t, ctx, "rolling-out")
	s.openGate(t)
	waitMatrix(t, ctx, "web", "prod", "in sync")
	if !notReloaded(t, ctx) {
		t.Error("the overview was reloaded between rolling out and in sync")
	}
	if img := s.env.Image(t, s.ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("prod's web runs %s after the approval, want example.com/web:2.0.0", img)
	}

	// History on the environment page: the apply, by github:demo.
	run(t, ctx, "prod's history", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("#history", chromedp.ByID),
		chromedp.Click("#history summary", chromedp.ByQuery))
	if got := text(t, ctx, "#history li"); !strings.Contains(got, "succeeded") || !strings.Contains(got, "by github:demo") || !strings.Contains(got, "Deployment/web") {
		t.Errorf("history entry: %q", got)
	}

	// The DORA panel over the same history: one deploy, succeeded, no change failure.
	if got := text(t, ctx, "#dora"); !strings.Contains(got, "1 succeeded of 1 deploy") || !strings.Contains(got, "Change failure rate\n0%\n0 of 1") {
		t.Errorf("prod's DORA panel: %q; want 1 succeeded of 1 deploy and a change failure rate of 0%%", got)
	}

	// A lock, taken and removed.
	run(t, ctx, "taking a lock", chromedp.Navigate(s.base+"/locks"), chromedp.WaitVisible("#lock-form", chromedp.ByID),
		chromedp.SetValue("#path", "apps/prod", chromedp.ByID), chromedp.SetValue("#lreason", "release freeze for the sale", chromedp.ByID),
		chromedp.Click("#lock-submit", chromedp.ByID), chromedp.WaitVisible(`#locks tr[data-path="apps/prod"]`, chromedp.ByQuery))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Locked apps/prod for a deploy until") {
		t.Errorf("after Lock: %q", got)
	}
	screenshot(t, ctx, "locks")
	run(t, ctx, "the overview shows the lock", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#matrix", chromedp.ByID))
	if got := text(t, ctx, `th[data-env="prod"] .envhead`); !strings.Contains(got, "apps/prod: deploy by github:demo") {
		t.Errorf("prod's column head: %q", got)
	}
	run(t, ctx, "unlocking", chromedp.Navigate(s.base+"/locks"), chromedp.Click(`#locks tr[data-path="apps/prod"] button.unlock`, chromedp.ByQuery),
		chromedp.WaitVisible("#no-locks", chromedp.ByID))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Unlocked apps/prod (a deploy).") {
		t.Errorf("after Unlock: %q", got)
	}

	// Where is 2.0.0 running? Typed into the header's search box.
	run(t, ctx, "searching", chromedp.SendKeys("#q", "2.0.0\n", chromedp.ByID), chromedp.WaitVisible("#result-count", chromedp.ByID))
	var rows []string
	run(t, ctx, "reading results", chromedp.Evaluate(`[...document.querySelectorAll("#results tbody tr")].map(r => r.dataset.env + "/" + r.dataset.target + " " + r.cells[2].textContent + " " + r.cells[6].textContent.trim())`, &rows))
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "staging/eu web") || !strings.HasPrefix(rows[1], "prod/eu web") || strings.Contains(rows[1], "before the recorded history") {
		t.Errorf("search 2.0.0: %q; want staging and prod's web, prod's since the approval", rows)
	}
	screenshot(t, ctx, "search")
}

// TestBrowserPhone: at phone width the overview and the plan fit, and the
// Approve button is reachable by keyboard.
func TestBrowserPhone(t *testing.T) {
	s := startStack(t, "{demoLogin: demo}", "", nil, nil)
	ctx := browse(t, 390, 844)
	run(t, ctx, "signing in", chromedp.Navigate(s.base+"/signin"), chromedp.Click("#signin-demo", chromedp.ByID), chromedp.WaitVisible("#matrix", chromedp.ByID))
	waitMatrix(t, ctx, "web", "prod", "pending")
	var overflow bool
	run(t, ctx, "measuring", chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow))
	if overflow {
		t.Error("the overview is wider than a phone screen; the matrix should scroll inside its region")
	}
	screenshot(t, ctx, "overview-phone")
	run(t, ctx, "opening prod", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("#approve", chromedp.ByID))
	var focused string
	for i := 0; i < 40 && focused != "approve"; i++ {
		run(t, ctx, "tabbing", chromedp.KeyEvent("\t"), chromedp.Evaluate(`document.activeElement.id`, &focused))
	}
	if focused != "approve" {
		t.Error("Approve is not reachable with the Tab key")
	}
	var unlabelled []string
	run(t, ctx, "labels", chromedp.Evaluate(`[...document.querySelectorAll("input:not([type=hidden]), select, button")].filter(e =>
  !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML)`, &unlabelled))
	if len(unlabelled) > 0 {
		t.Errorf("controls without a label: %v", unlabelled)
	}
	screenshot(t, ctx, "environment-phone")
}

// TestBrowserGitHubSignIn: "Sign in with GitHub" through the GitHub test
// server's OAuth web flow; the login's permission on the manifests
// repository decides: a maintainer approves (recorded as the approver), a
// reader reads without buttons, anyone else is turned away.
func TestBrowserGitHubSignIn(t *testing.T) {
	s, gh, signIn := startGitHubStack(t, "")
	t.Run("no access", func(t *testing.T) {
		ctx := signIn(t, "mallory")
		if got := text(t, ctx, "main"); !strings.Contains(got, "mallory may not see") {
			t.Errorf("mallory sees: %q", got)
		}
	})
	t.Run("reader", func(t *testing.T) {
		ctx := signIn(t, "rita")
		run(t, ctx, "the overview", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#login", chromedp.ByID))
		waitMatrix(t, ctx, "web", "prod", "pending")
		run(t, ctx, "prod", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("#plan", chromedp.ByID))
		var buttons int
		run(t, ctx, "counting buttons", chromedp.Evaluate(`document.querySelectorAll("#approve, #reject").length`, &buttons))
		if got := text(t, ctx, "#login"); buttons != 0 || !strings.Contains(got, "rita (read only)") {
			t.Errorf("rita (read): %d decision buttons, login %q", buttons, got)
		}
	})
	t.Run("maintainer approves", func(t *testing.T) {
		ctx := signIn(t, "maria")
		if got := text(t, ctx, "#login"); got != "maria" {
			t.Fatalf("signed in as %q, want maria", got)
		}
		run(t, ctx, "approving", chromedp.WaitVisible("#approve", chromedp.ByID), chromedp.Click("#approve", chromedp.ByID),
			chromedp.WaitVisible("#flash", chromedp.ByID))
		if got := text(t, ctx, "#flash"); !strings.Contains(got, "Approved by maria") {
			t.Errorf("after Approve: %q", got)
		}
		var cookies string
		run(t, ctx, "reading cookies", chromedp.Evaluate(`document.cookie`, &cookies))
		if strings.Contains(cookies, "stagehand_session") {
			t.Errorf("the session cookie is readable by script: %q", cookies)
		}
		// The history records github:maria as the approver, shown without a reload once the apply is recorded.
		s.openGate(t)
		run(t, ctx, "prod", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("#plan", chromedp.ByID))
		var history string
		for deadline := time.Now().Add(90 * time.Second); !strings.Contains(history, "by github:maria"); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("prod's history never showed maria's apply; the page says:\n%s", text(t, ctx, "main"))
			}
			run(t, ctx, "reading the history", chromedp.Evaluate(`(document.querySelector("#history li") || {textContent: ""}).textContent`, &history))
		}
	})
	if gh.OAuth().CodesExchanged() != 3 {
		t.Errorf("codes exchanged %d, want 3 (one per sign-in)", gh.OAuth().CodesExchanged())
	}
}

// startGitHubStack is startStackWith (prodExtra) with the GitHub App of a GitHub test server and "Sign in
// with GitHub" through its OAuth web flow: maria maintains the manifests repository (she may approve),
// rita reads it. signIn opens prod's page in a fresh browser signed in as login.
func startGitHubStack(t *testing.T, prodExtra string) (*stack, *githubtest.Server, func(t *testing.T, login string) context.Context) {
	t.Helper()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("maria", "maintain")
	gh.Repo("acme", "manifests").SetPermission("rita", "read")
	gh.OAuth().EnableWebFlow("Iv1.stagehand", "oauth-secret", "http://127.0.0.1:")
	files := map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"),
		"client-id": []byte("Iv1.stagehand\n"), "client-secret": []byte("oauth-secret\n")}
	more := fmt.Sprintf(`github:
  apiURL: %q
  owner: acme
  repo: manifests
  webhookSecretFile: hook
  app: {appID: %d, installationID: %d, privateKeyFile: app.pem}
  approvers: {minPermission: maintain}
`, gh.URL(), gh.App().ID(), gh.App().InstallationID())
	s := startStackWith(t, prodExtra, fmt.Sprintf("{oauth: {clientIDFile: client-id, clientSecretFile: client-secret, webURL: %q}}", gh.RootURL()), more, files,
		func(sha string) {
			gh.Repo("acme", "manifests").MirrorCommit("main", sha, manifests, "staging and prod")
		})
	signIn := func(t *testing.T, login string) context.Context {
		t.Helper()
		gh.OAuth().SignInWeb(login)
		ctx := browse(t, 1280, 900)
		run(t, ctx, "signing in as "+login, chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("#signin-github", chromedp.ByID),
			chromedp.Click("#signin-github", chromedp.ByID), chromedp.WaitVisible("main h1", chromedp.ByQuery))
		return ctx
	}
	return s, gh, signIn
}
