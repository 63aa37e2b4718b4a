package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// nowWorld is `reconciler run` over prod (web in web.json, included by the root manifest) on the real API
// server, git server and GitHub test server, with alice's named token.
type nowWorld struct {
	t          *testing.T
	env        *testenv.Env
	gh         *githubtest.Server
	git        *gitserver.Server
	ns, server string
	tokenFile  string
}

// passes is how many passes over prod the reconciler has ended, from its
// /metrics (the count of stagehand_reconcile_duration_seconds).
func (w *nowWorld) passes(t *testing.T) uint64 {
	t.Helper()
	resp, err := http.Get(w.server + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for line := range strings.Lines(string(b)) {
		name, rest, _ := strings.Cut(line, "{")
		labels, value, _ := strings.Cut(rest, "} ")
		if name != "stagehand_reconcile_duration_seconds_count" || !strings.Contains(labels, `environment="prod"`) {
			continue
		}
		c, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		n += c
	}
	return n
}

// startNowWorld commits each of commits in turn (files, mirrored into GitHub), creates the Deployments
// (name → image) and runs the reconciler until prod is in sync at the last commit, or has a plan pending
// for it when pending is set. It returns the commits' SHAs.
func startNowWorld(t *testing.T, deployments map[string]string, pending bool, commits ...map[string]string) (*nowWorld, []string) {
	w := &nowWorld{t: t, env: cluster.Env(t), gh: githubtest.New(t), git: gitserver.New(t)}
	w.gh.CreateRepo("acme", "manifests", "main")
	url := w.git.Init(t, "manifests")
	var shas []string
	for i, files := range commits {
		msg := fmt.Sprintf("change %d", i+1)
		sha := w.git.Repo("manifests").Commit(t, "main", files, msg)
		w.gh.Repo("acme", "manifests").MirrorCommit("main", sha, files, msg)
		shas = append(shas, sha)
	}
	w.ns = w.env.Namespace(t)
	for name, image := range deployments {
		w.env.CreateDeployment(t, w.ns, name, image)
	}
	dir := t.TempDir()
	for name, content := range map[string][]byte{"app.pem": w.gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"), "token": []byte("alice-token-000001\n"),
		"tokens.yaml": []byte("- {name: alice, token: alice-token-000001, scopes: [read, \"approve:*\"]}\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.tokenFile = filepath.Join(dir, "token")
	addr := testenv.FreeAddr(t)
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q, interval: 1s}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 1s}
github:
  apiURL: %q
  owner: acme
  repo: manifests
  webhookSecretFile: hook
  app: {appID: %d, installationID: %d, privateKeyFile: app.pem}
server: {listen: %q, tokensFile: tokens.yaml}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
`, url, filepath.Join(dir, "cache"), w.env.Kubeconfig, w.ns, w.gh.URL(), w.gh.App().ID(), w.gh.App().InstallationID(), addr, w.ns, w.ns, w.env.Kubeconfig)
	config := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewReconciler(&strings.Builder{}, &strings.Builder{})
	cmd.SetArgs([]string{"run", "--config", config, "--log-level", "error", "--enable-leader-election=false"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not stop within 30s")
		}
	})
	w.server = "http://" + addr
	last := shas[len(shas)-1]
	testenv.WaitFor(t, 30*time.Second, "prod planned at the last commit", func() bool {
		v, ok := prodStatus(t, w.server, w.tokenFile)
		if pending {
			return ok && v.Pending != nil && v.Pending.Revision == last
		}
		return ok && v.Revision == last && v.PlanHash == "" && v.Error == ""
	})
	return w, shas
}

// history reads prod's history over the API.
func (w *nowWorld) history() []approval.Entry {
	w.t.Helper()
	h, err := testClient(w.t, w.server, w.tokenFile).History(context.Background(), "prod")
	if err != nil {
		w.t.Fatalf("GET history: %v", err)
	}
	return h
}

// TestRollbackNowRefusesMoreThanThePin: worker was added to prod since the revision rolled back to, and
// waits for approval. `rollback --now` pins web back; the plan it makes also deploys worker, which the
// rollback does not name: it is not approved as the caller (the answer names worker's change), it waits
// for an approver, and nothing is applied.
func TestRollbackNowRefusesMoreThanThePin(t *testing.T) {
	root := map[string]string{"environments/prod/manifest.json": `{"includes": ["./web.json"]}` + "\n"}
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	c1 := map[string]string{"environments/prod/manifest.json": root["environments/prod/manifest.json"], "environments/prod/web.json": web("1.0.0")}
	c2 := map[string]string{"environments/prod/web.json": web("2.0.0")}
	c3 := map[string]string{"environments/prod/manifest.json": `{"includes": ["./web.json"], "services": [{"name": "worker", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}
	w, shas := startNowWorld(t, map[string]string{"web": "example.com/web:2.0.0", "worker": "example.com/worker:0.1.0"}, true, c1, c2, c3)

	stdout, stderr, code := runReconciler(t, "rollback", "--server", w.server, "--token-file", w.tokenFile, "--env", "prod", "--as", "alice",
		"--to", shas[0], "--reason", "web 2.0.0 drops orders", "--now")
	if code != 0 || !strings.Contains(stdout, "pinned by rollback #1") {
		t.Fatalf("rollback --now: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "its changes differ from the rollback's, it also changes worker: container worker of Deployment "+w.ns+"/worker in target a → example.com/worker:0.2.0") {
		t.Fatalf("rollback --now with worker riding along: the answer does not name worker's change:\n%s", stdout)
	}
	v, ok := prodStatus(t, w.server, w.tokenFile)
	if !ok || v.Pending == nil || len(v.Pending.Approvals) != 0 || v.PinnedBy != "pinned by rollback #1" {
		t.Fatalf("status: %+v, want the pinned plan pending without approvals", v)
	}
	// Two passes over prod end (a resync a second) before the images are looked at.
	from := w.passes(t)
	testenv.WaitFor(t, 30*time.Second, "two more passes over prod", func() bool { return w.passes(t) >= from+2 })
	if img := w.env.Image(t, w.ns, "worker"); img != "example.com/worker:0.1.0" {
		t.Errorf("worker = %s, want 0.1.0: deployed with the rollback", img)
	}
	if img := w.env.Image(t, w.ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("web = %s, want 2.0.0 until someone approves the plan", img)
	}
}

// TestRollbackNowSkipConfirmationNamesThePerson: prod applies by itself (skipConfirmation); alice's
// `rollback --now` is applied at once, and its history entry names her typed identity, not
// skipConfirmation.
func TestRollbackNowSkipConfirmationNamesThePerson(t *testing.T) {
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	c1 := map[string]string{"environments/prod/manifest.json": `{"skipConfirmation": true, "includes": ["./web.json"]}` + "\n", "environments/prod/web.json": web("1.0.0")}
	c2 := map[string]string{"environments/prod/web.json": web("2.0.0")}
	w, shas := startNowWorld(t, map[string]string{"web": "example.com/web:2.0.0"}, false, c1, c2)

	stdout, stderr, code := runReconciler(t, "rollback", "--server", w.server, "--token-file", w.tokenFile, "--env", "prod", "--as", "alice",
		"--to", shas[0], "--reason", "web 2.0.0 drops orders", "--now")
	if code != 0 || !strings.Contains(stdout, "pinned by rollback #1") {
		t.Fatalf("rollback --now: exit %d\n%s\n%s", code, stdout, stderr)
	}
	testenv.WaitFor(t, 30*time.Second, "web back on 1.0.0", func() bool { return w.env.Image(t, w.ns, "web") == "example.com/web:1.0.0" })
	var hist []approval.Entry
	// The apply is over once its result is in the history (no controllers run here, so the rollout times out:
	// what matters is who the entry names). Before the rollback prod was in sync: the entry is the rollback's.
	testenv.WaitFor(t, 30*time.Second, "the rollback's apply recorded", func() bool {
		time.Sleep(100 * time.Millisecond)
		hist = w.history()
		return len(hist) > 0
	})
	if e := hist[0]; e.Approver != "token:alice" || (len(e.Approvers) > 0 && (len(e.Approvers) != 1 || e.Approvers[0] != "token:alice")) {
		t.Errorf("history entry of the --now rollback: approver %q, approvers %v; want token:alice, who rolled back", e.Approver, e.Approvers)
	}
}
