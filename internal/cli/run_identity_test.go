package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRunGitHubUserApproves: `reconciler run` with github.app takes GitHub
// user tokens on the API and applies the check run's approver rule to
// them: `reconciler approve` with a read-only collaborator's token
// ($GITHUB_TOKEN) is refused with the rule, with a maintainer's it approves
// and the history records the login GitHub gave, never a typed-in name.
// GitHub is asked who a token is once, not on every request.
func TestRunGitHubUserApproves(t *testing.T) {
	env := cluster.Env(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("maria", "maintain")
	gh.Repo("acme", "manifests").SetPermission("rita", "read")
	maria, rita := gh.OAuth().UserToken("maria"), gh.OAuth().UserToken("rita")
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`}
	sha := git.Repo("manifests").Commit(t, "main", files, "prod")
	gh.Repo("acme", "manifests").MirrorCommit("main", sha, files, "prod")
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "web", "example.com/web:1.0.0")

	dir := t.TempDir()
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.FreeAddr(t)
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
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
  approvers: {minPermission: maintain}
server: {listen: %q}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, gh.URL(), gh.App().ID(), gh.App().InstallationID(), addr, ns, ns, env.Kubeconfig)
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

	waitCheckRun(t, gh, func(r githubtest.CheckRun) bool { return r.Conclusion == "action_required" })
	server := "http://" + addr
	t.Setenv("STAGEHAND_TOKEN", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var pending *approval.Pending
	testenv.WaitFor(t, 30*time.Second, "prod's pending plan over the API", func() bool {
		t.Setenv("GITHUB_TOKEN", maria)
		v, err := testClient(t, server, "").Environment(ctx, "prod")
		if err != nil {
			return false
		}
		pending = v.Pending
		return pending != nil
	})
	base := []string{"approve", "--server", server, "--env", "prod", "--plan-hash", pending.PlanHash}

	t.Setenv("GITHUB_TOKEN", rita)
	if _, stderr, code := runReconciler(t, base...); code != 1 || !strings.Contains(stderr, "refused (403)") ||
		!strings.Contains(stderr, "@rita has read on acme/manifests; approving prod needs maintain permission or higher on acme/manifests") {
		t.Errorf("approve by rita (read): exit %d, %s; want 403 with the rule", code, stderr)
	}
	t.Setenv("GITHUB_TOKEN", maria)
	if _, stderr, code := runReconciler(t, append(base, "--as", "boss")...); code != 1 || !strings.Contains(stderr, "approver comes from your credentials: you are github:maria") {
		t.Errorf("approve by maria as boss: exit %d, %s; want 400", code, stderr)
	}
	stdout, stderr, code := runReconciler(t, base...)
	if code != 0 || !strings.Contains(stdout, "approved by github:maria") {
		t.Fatalf("approve by maria: exit %d\n%s\n%s", code, stdout, stderr)
	}
	testenv.WaitFor(t, 30*time.Second, "maria in prod's history", func() bool {
		c, err := api.NewClient(server, maria)
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.History(ctx, "prod")
		return err == nil && len(h) == 1 && h[0].Approver == "github:maria"
	})
	if n := gh.CountRequests("GET", "/user"); n != 2 {
		t.Errorf("GET /user asked %d times, want 2 (once per token)", n)
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
