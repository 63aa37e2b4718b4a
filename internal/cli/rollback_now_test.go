package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRollbackNow: incident mode. `reconciler rollback --now` pins the
// rolled-back version, approves its plan as the caller and applies it; resyncs
// while the pull request is open keep it (no flip back to git's newer
// version), and the status says "pinned by rollback #1". Once the pull request
// is merged (git says the pinned version, and its webhook arrives) the pin
// and the hold are gone and prod is in sync.
func TestRollbackNow(t *testing.T) {
	t.Run("approved by the caller", func(t *testing.T) { testRollbackNow(t, "", true) })
	// prod needs two approvers: the caller's approval is counted, the plan waits for one more, and the
	// pin stands meanwhile.
	t.Run("needs another approver", func(t *testing.T) { testRollbackNow(t, ", approvals: {required: 2}", false) })
}

func testRollbackNow(t *testing.T, envExtra string, approved bool) {
	env := cluster.Env(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("alice", "maintain")
	gh.Repo("acme", "manifests").SetPermission("bob", "maintain")
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	web1 := `{"services": [{"name": "web", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n"
	v1 := map[string]string{
		"environments/prod/manifest.json": `{"includes": ["./web.json"]}` + "\n",
		"environments/prod/web.json":      web1,
	}
	c1 := git.Repo("manifests").Commit(t, "main", v1, "prod")
	gh.Repo("acme", "manifests").MirrorCommit("main", c1, v1, "prod")
	v2 := map[string]string{"environments/prod/web.json": strings.Replace(web1, "1.0.0", "2.0.0", 1)}
	c2 := git.Repo("manifests").Commit(t, "main", v2, "web 2")
	gh.Repo("acme", "manifests").MirrorCommit("main", c2, v2, "web 2")
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "web", "example.com/web:2.0.0")

	dir := t.TempDir()
	// alice's named token: who rolls back (and approves the pinned plan) is who the token is.
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"), "token": []byte("alice-token-000001\n"),
		"bob-token": []byte("bob-token-0000001\n"),
		// Each token acts for its person (who may approve: maintain on acme/manifests), so that they count
		// where automation may not approve (approvals.required 2).
		"tokens.yaml": []byte("- {name: alice, token: alice-token-000001, scopes: [read, \"approve:*\"], actsFor: \"github:alice\"}\n" +
			"- {name: bob, token: bob-token-0000001, scopes: [read, \"approve:*\"], actsFor: \"github:bob\"}\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.FreeAddr(t)
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q, interval: 1s}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]%s}
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
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, envExtra, gh.URL(), gh.App().ID(), gh.App().InstallationID(), addr, ns, ns, env.Kubeconfig)
	config := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"run", "--config", config, "--log-level", "error", "--enable-leader-election=false"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	server := "http://" + addr
	tokenFile := filepath.Join(dir, "token")
	// prod runs what git says: in sync at c2.
	testenv.WaitFor(t, 30*time.Second, "prod observed in sync at c2", func() bool {
		v, ok := prodStatus(t, server, tokenFile)
		return ok && v.Revision == c2 && v.PlanHash == "" && v.Error == ""
	})

	stdout, stderr, code := runReconciler(t, "rollback", "--server", server, "--token-file", tokenFile, "--env", "prod", "--as", "alice",
		"--to", c1, "--reason", "web 2.0.0 drops orders", "--now")
	if code != 0 || !strings.Contains(stdout, "pinned by rollback #1") {
		t.Fatalf("rollback --now: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !approved {
		if !strings.Contains(stdout, "has 1 of the 2 approvals it needs (token:alice counted): it waits for more approvers") {
			t.Fatalf("rollback --now needing two approvers:\n%s", stdout)
		}
		v, ok := prodStatus(t, server, tokenFile)
		if !ok || v.Pending == nil || len(v.Pending.Approvals) != 1 || v.PinnedBy != "pinned by rollback #1" {
			t.Fatalf("status: %+v, want the pinned plan pending with alice's approval", v)
		}
		// A second approver completes it.
		if _, stderr, code := runReconciler(t, "approve", "--server", server, "--token-file", filepath.Join(dir, "bob-token"), "--env", "prod", "--as", "bob",
			"--plan-hash", v.Pending.PlanHash); code != 0 {
			t.Fatalf("approve as bob: exit %d, %s", code, stderr)
		}
	} else if !strings.Contains(stdout, "approved by token:alice") {
		t.Fatalf("rollback --now: %s", stdout)
	}
	testenv.WaitFor(t, 30*time.Second, "web back on 1.0.0", func() bool { return env.Image(t, ns, "web") == "example.com/web:1.0.0" })
	// The apply is over once its result is in the history (this control plane runs no controllers, so its rollout
	// times out: what matters is the image the pin keeps), and a pass after it has observed prod in sync: until
	// then the status shows the last pass's observation, which planned the pinned plan (its planHash).
	testenv.WaitFor(t, 30*time.Second, "the rollback's apply recorded and observed in sync", func() bool {
		v, ok := prodStatus(t, server, tokenFile)
		return ok && v.Pending == nil && v.InFlight == nil && v.LastResult != nil && strings.Contains(v.LastResult.Approver, "alice") &&
			v.PlanHash == ""
	})

	// Resyncs (every second) while the pull request is open keep 1.0.0 and propose nothing.
	first := passes(t, server)
	testenv.WaitFor(t, 30*time.Second, "three resyncs", func() bool {
		v, ok := prodStatus(t, server, tokenFile)
		if ok && (v.PinnedBy != "pinned by rollback #1" || v.PlanHash != "" || v.Pending != nil) {
			t.Fatalf("status during the pin: pinnedBy %q, planHash %q, pending %+v", v.PinnedBy, v.PlanHash, v.Pending)
		}
		return passes(t, server) >= first+3
	})
	if img := env.Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Fatalf("image after resyncs = %s, want 1.0.0 kept", img)
	}

	// The pull request merges: git says 1.0.0 again, the webhook arrives.
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rest.PullRequests.Merge(ctx, "acme", "manifests", 1, "", nil); err != nil {
		t.Fatal(err)
	}
	// The webhook arrives before the reconciler's source has the merge: the hold ends, but the pin keeps
	// 1.0.0 until git says it (removing it at once flipped the cluster back to 2.0.0 for a pass).
	if code, body, err := githubtest.Send(ctx, server+"/webhook/github", "hook-secret", gh.Webhooks("acme", "manifests").PullRequest(1, "closed", "alice")); err != nil || code != http.StatusOK {
		t.Fatalf("merged delivery: %d %s %v", code, body, err)
	}
	testenv.WaitFor(t, 30*time.Second, "the hold ended by the merge", func() bool { return holdOf(t, server, tokenFile) == nil })
	first = passes(t, server)
	testenv.WaitFor(t, 30*time.Second, "three resyncs before git has the merge", func() bool {
		v, ok := prodStatus(t, server, tokenFile)
		if ok && (v.PinnedBy != "pinned by rollback #1" || v.Pending != nil) {
			t.Fatalf("status before git has the merge: pinnedBy %q, pending %+v", v.PinnedBy, v.Pending)
		}
		return passes(t, server) >= first+3
	})
	if img := env.Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Fatalf("image before git has the merge = %s, want 1.0.0 kept", img)
	}
	merged, _ := gh.Repo("acme", "manifests").File("main", "environments/prod/web.json")
	c3 := git.Repo("manifests").Commit(t, "main", map[string]string{"environments/prod/web.json": merged}, "Merge rollback")
	testenv.WaitFor(t, 30*time.Second, "prod in sync at the merge, unpinned and unheld", func() bool {
		v, ok := prodStatus(t, server, tokenFile)
		return ok && v.Revision == c3 && v.PlanHash == "" && v.Pin == nil && v.PinnedBy == "" && holdOf(t, server, tokenFile) == nil
	})
	if img := env.Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Errorf("image after the merge = %s, want 1.0.0", img)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop within 30s")
	}
}

// prodStatus reads GET /api/v1/environments/prod (false while the API does not answer).
func prodStatus(t *testing.T, server, tokenFile string) (*status.Environment, bool) {
	t.Helper()
	// Polled in loops: stay well under the API's per-token rate limit (20/s).
	time.Sleep(100 * time.Millisecond)
	v, err := testClient(t, server, tokenFile).Environment(context.Background(), "prod")
	return v, err == nil
}

// passes reads how many passes over prod have ended, from /metrics.
func passes(t *testing.T, server string) int {
	t.Helper()
	resp, err := http.Get(server + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "stagehand_reconcile_duration_seconds_count{"); ok && strings.Contains(rest, `environment="prod"`) {
			var c int
			if _, err := fmt.Sscan(rest[strings.LastIndex(rest, " ")+1:], &c); err == nil {
				n += c
			}
		}
	}
	return n
}
