package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestRollbackAndRelease: `reconciler run` with github.app serves the
// rollback: `reconciler rollback` opens the rollback pull request through
// the App, touching only the service that differs, and places the hold, which
// the status API shows; unknown targets are refused by name; merging the pull
// request (its webhook) ends the hold; `reconciler release` ends one too and
// says so on the pull request.
func TestRollbackAndRelease(t *testing.T) {
	env := cluster.Env(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	apiJSON := "{\n  \"services\": [ {\"name\": \"api\", \"containers\": [{\"dockerTag\": \"3.0.0\"}]} ]\n}\n"
	v1 := map[string]string{
		"environments/prod/manifest.json": `{"includes": ["./web.json", "./api.json"]}` + "\n",
		"environments/prod/web.json":      `{"services": [{"name": "web", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n",
		"environments/prod/api.json":      apiJSON,
	}
	c1 := git.Repo("manifests").Commit(t, "main", v1, "prod")
	gh.Repo("acme", "manifests").MirrorCommit("main", c1, v1, "prod")
	v2 := map[string]string{"environments/prod/web.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}` + "\n"}
	c2 := git.Repo("manifests").Commit(t, "main", v2, "web 2")
	gh.Repo("acme", "manifests").MirrorCommit("main", c2, v2, "web 2")
	ns := env.Namespace(t)

	dir := t.TempDir()
	// alice's named token: who rolls back is who the token is.
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"), "token": []byte("alice-token-000001\n"),
		"tokens.yaml": []byte("- {name: alice, token: alice-token-000001, scopes: [read, \"approve:*\"]}\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.FreeAddr(t)
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q, interval: 1s}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
github:
  apiURL: %q
  owner: acme
  repo: manifests
  webhookSecretFile: hook
  app: {appID: %d, installationID: %d, privateKeyFile: app.pem}
server: {listen: %q, tokensFile: tokens.yaml}
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
	server := "http://" + addr
	testenv.WaitFor(t, 30*time.Second, "the API", func() bool {
		resp, err := http.Get(server + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	tokenFile := filepath.Join(dir, "token")
	client := []string{"--server", server, "--token-file", tokenFile, "--env", "prod", "--as", "alice"}

	// Rolling back to c1 opens the pull request that puts web back, and holds prod.
	stdout, stderr, code := runReconciler(t, append([]string{"rollback", "--to", c1, "--reason", "web 2.0.0 fails"}, client...)...)
	if code != 0 || !strings.Contains(stdout, "rollback of prod to "+c1[:7]+" opened") || !strings.Contains(stdout, "web web 2.0.0 → 1.0.0") {
		t.Fatalf("rollback: exit %d\n%s\n%s", code, stdout, stderr)
	}
	prs := gh.Repo("acme", "manifests").PullRequests()
	if len(prs) != 1 || prs[0].Head != "stagehand/rollback-prod" || prs[0].Title != "Rollback prod to "+c1[:7]+": web 2.0.0 fails" {
		t.Fatalf("pull requests = %+v", prs)
	}
	if got, _ := gh.Repo("acme", "manifests").File(prs[0].Head, "environments/prod/web.json"); got != v1["environments/prod/web.json"] {
		t.Errorf("web.json on the rollback branch:\n%s", got)
	}
	if got, _ := gh.Repo("acme", "manifests").File(prs[0].Head, "environments/prod/api.json"); got != apiJSON {
		t.Errorf("api.json changed on the rollback branch:\n%s", got)
	}
	hold := holdOf(t, server, tokenFile)
	if hold == nil || hold.Author != "token:alice" || !strings.HasSuffix(hold.Links[lock.HoldLinkPullRequest], "/acme/manifests/pull/1") {
		t.Fatalf("hold in the status API = %+v, want token:alice's (typed), linked to pull request 1", hold)
	}
	if stdout, _, code := runReconciler(t, "list", "--server", server, "--token-file", tokenFile); code != 0 || !strings.Contains(stdout, "apps/prod/hold") {
		t.Errorf("lock list: exit %d\n%s", code, stdout)
	}

	// A plan proposed while prod is held says so on its check run: api 3.1.0 is merged by hand meanwhile.
	env.CreateDeployment(t, ns, "api", "example.com/api:3.0.0")
	v3 := map[string]string{"environments/prod/api.json": strings.Replace(apiJSON, "3.0.0", "3.1.0", 1)}
	c3 := git.Repo("manifests").Commit(t, "main", v3, "api 3.1")
	gh.Repo("acme", "manifests").MirrorCommit("main", c3, v3, "api 3.1")
	testenv.WaitFor(t, 30*time.Second, "the held plan's check run", func() bool {
		for _, r := range gh.Repo("acme", "manifests").CheckRuns() {
			if r.HeadSHA == c3 && r.Name == "stagehand/prod" {
				if !strings.Contains(r.Summary, "**Held by a rollback:** apps/prod/hold is held by a rollback of token:alice") {
					t.Fatalf("check run of %s does not show the hold:\n%s", c3, r.Summary)
				}
				return true
			}
		}
		return false
	})

	// Unknown targets are refused, naming them; nothing else is opened.
	for _, tt := range []struct{ to, want string }{
		{"999", "unknown history entry 999 in environment prod"},
		{strings.Repeat("ab", 20), "revision " + strings.Repeat("ab", 20) + " is not in acme/manifests"},
		{"main~1", `"main~1": want previous, a history id or a revision`},
	} {
		_, stderr, code := runReconciler(t, append([]string{"rollback", "--to", tt.to, "--reason", "x"}, client...)...)
		if code != 1 || !strings.Contains(stderr, "(404)") || !strings.Contains(stderr, tt.want) {
			t.Errorf("rollback --to %s: exit %d, stderr %q; want 404 naming it", tt.to, code, stderr)
		}
	}
	if n := len(gh.Repo("acme", "manifests").PullRequests()); n != 1 {
		t.Errorf("%d pull requests after refusals, want 1", n)
	}

	// Merging the pull request ends the hold.
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rest.PullRequests.Merge(ctx, "acme", "manifests", prs[0].Number, "", nil); err != nil {
		t.Fatal(err)
	}
	if code, body, err := githubtest.Send(ctx, server+"/webhook/github", "hook-secret", gh.Webhooks("acme", "manifests").PullRequest(prs[0].Number, "closed", "alice")); err != nil || code != http.StatusOK {
		t.Fatalf("merged delivery: %d %s %v", code, body, err)
	}
	if h := holdOf(t, server, tokenFile); h != nil {
		t.Errorf("hold after the merge = %+v, want none", h)
	}
	if _, stderr, code := runReconciler(t, append([]string{"release"}, client...)...); code != 1 || !strings.Contains(stderr, "prod has no hold to release") {
		t.Errorf("release without a hold: exit %d, %s", code, stderr)
	}
	// Rolling back to what main says now: nothing to roll back, no hold.
	if stdout, stderr, code := runReconciler(t, append([]string{"rollback", "--to", gh.Repo("acme", "manifests").Branch("main"), "--reason", "again"}, client...)...); code != 0 || !strings.Contains(stdout, "nothing to roll back") {
		t.Errorf("rollback to what runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if h := holdOf(t, server, tokenFile); h != nil {
		t.Errorf("hold after an empty rollback = %+v", h)
	}

	// `reconciler release` ends a hold and says so on the pull request.
	if stdout, stderr, code := runReconciler(t, append([]string{"rollback", "--to", c2, "--reason", "1.0.0 was fine after all"}, client...)...); code != 0 {
		t.Fatalf("rollback to c2: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if holdOf(t, server, tokenFile) == nil {
		t.Fatal("no hold after the second rollback")
	}
	if stdout, stderr, code := runReconciler(t, append([]string{"release", "--reason", "fixed forward"}, client...)...); code != 0 || !strings.Contains(stdout, "released the hold on prod") {
		t.Errorf("release: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if h := holdOf(t, server, tokenFile); h != nil {
		t.Errorf("hold after release = %+v", h)
	}
	comments := gh.Repo("acme", "manifests").Comments(2)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "The hold on prod was released by alice: fixed forward.") {
		t.Errorf("comments on the second rollback pull request = %+v", comments)
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

// holdOf returns prod's hold as GET /api/v1/environments/prod lists it (nil: none).
func holdOf(t *testing.T, server, tokenFile string) *lock.Lock {
	t.Helper()
	// Polled in loops: stay well under the API's per-token rate limit (20/s).
	time.Sleep(100 * time.Millisecond)
	v, err := testClient(t, server, tokenFile).Environment(context.Background(), "prod")
	if err != nil {
		t.Fatalf("GET prod: %v", err)
	}
	for _, l := range v.Locks {
		if l.Type == lock.Hold && l.Path == "apps/prod/hold" {
			return &l
		}
	}
	return nil
}
