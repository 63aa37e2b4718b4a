package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/oidctest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// runPrbot executes the prbot binary's command tree with the given environment variables.
func runPrbot(t *testing.T, environ map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	deps := prbotDeps{
		lookup: func(k string) (string, bool) { v, ok := environ[k]; return v, ok },
		now:    func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) },
	}
	err := root.ExecuteContext(withPrbotDeps(context.Background(), deps))
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}

func prbotRepo(t *testing.T) (*githubtest.Server, map[string]string) {
	t.Helper()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	srv.Repo("acme", "manifests").Commit("main", map[string]string{
		"pipeline.yaml":                        "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    requires: {healthy: false}\n",
		"environments/devel/manifest.json":     `{"includes": ["checkout-api.json"]}` + "\n",
		"environments/devel/checkout-api.json": "{\n  \"services\": [\n    {\"name\": \"checkout-api\", \"containers\": [{\"dockerTag\": \"1.5.0\"}]}\n  ]\n}\n",
		"environments/staging/manifest.json":   "{\n  \"services\": [\n    {\"name\": \"checkout-api\", \"containers\": [{\"dockerTag\": \"1.4.0\"}]}\n  ]\n}\n",
	}, "seed")
	return srv, map[string]string{"GITHUB_TOKEN": srv.Token(), "GITHUB_API_URL": srv.URL(), "GITHUB_REPOSITORY": "acme/checkout-api"}
}

func TestPrbotBumpCommand(t *testing.T) {
	srv, environ := prbotRepo(t)

	// From the upstream repository's CI: the owned file comes from $GITHUB_REPOSITORY.
	out, errOut, code := runPrbot(t, environ, "bump", "--repo", "acme/manifests", "--env", "devel", "--service", "checkout-api", "--tag", "1.6.0", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res prbot.BumpResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not a bump result: %v\n%s", err, out)
	}
	if res.PR != 1 || !res.Created || res.File != "environments/devel/checkout-api.json" || res.Branch != "stagehand/bump-devel-checkout-api" {
		t.Errorf("result = %+v", res)
	}
	if got, _ := srv.Repo("acme", "manifests").File(res.Branch, res.File); !strings.Contains(got, `"dockerTag": "1.6.0"`) {
		t.Errorf("file on the branch:\n%s", got)
	}

	// Text output is the URL; the re-run changes nothing and says so.
	out, errOut, code = runPrbot(t, environ, "bump", "--repo", "acme/manifests", "--env", "devel", "--service", "checkout-api", "--tag", "1.6.0")
	if code != 0 || strings.TrimSpace(out) != res.URL || !strings.Contains(errOut, "already has checkout-api 1.6.0") {
		t.Errorf("re-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// GitLab CI names the project instead.
	gitlab := map[string]string{"GITHUB_TOKEN": environ["GITHUB_TOKEN"], "CI_PROJECT_NAME": "payments-api"}
	_, errOut, code = runPrbot(t, gitlab, "bump", "--repo", "acme/manifests", "--github-url", srv.URL(), "--env", "devel", "--service", "payments-api", "--tag", "1.0.0")
	if code != 1 || !strings.Contains(errOut, "environments/devel/payments-api.json: the file does not exist") {
		t.Errorf("bump of a missing owned file: exit %d, stderr %q", code, errOut)
	}
}

func TestPrbotUsageErrors(t *testing.T) {
	_, environ := prbotRepo(t)
	noCI := map[string]string{"GITHUB_TOKEN": "x", "GITHUB_API_URL": environ["GITHUB_API_URL"]}
	tests := []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"bump without tag", environ, []string{"bump", "--repo", "acme/manifests", "--env", "devel", "--service", "s"}, "--env, --service and --tag are required"},
		{"bump without owner", noCI, []string{"bump", "--repo", "acme/manifests", "--env", "devel", "--service", "s", "--tag", "1"}, "no --file and neither $GITHUB_REPOSITORY nor $CI_PROJECT_NAME"},
		{"bad repo", environ, []string{"promote", "--repo", "manifests", "--from", "devel", "--to", "staging"}, `--repo "manifests": want OWNER/NAME`},
		{"no credentials", map[string]string{}, []string{"promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging"}, "no GitHub credentials"},
		{"bad output", environ, []string{"promote", "--repo", "acme/manifests", "--from", "a", "--to", "b", "-o", "yaml"}, `invalid --output "yaml"`},
		{"unknown flag", environ, []string{"promote", "--nope"}, "unknown flag: --nope"},
		{"serve without config", environ, []string{"serve"}, "--config is required"},
		{"lock server without token", environ, []string{"promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging", "--lock-server", "http://127.0.0.1:1"},
			"--lock-server needs a token: pass --lock-token-file or set $STAGEHAND_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runPrbot(t, tt.environ, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

func TestPrbotPromoteCommand(t *testing.T) {
	srv, environ := prbotRepo(t)
	out, errOut, code := runPrbot(t, environ, "promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"devel → staging: dry-run", "Promote devel → staging: checkout-api 1.5.0", "files: environments/staging/manifest.json",
		srv.RootURL() + "/acme/checkout-api/compare/1.4.0...1.5.0"} { // the web root follows --github-url

		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if len(srv.Repo("acme", "manifests").PullRequests()) != 0 {
		t.Fatal("a dry run opened a pull request")
	}
	out, errOut, code = runPrbot(t, environ, "promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging", "--web-url", "https://ghe.example.com")
	if code != 0 || !strings.HasPrefix(out, "devel → staging: opened http") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	prs := srv.Repo("acme", "manifests").PullRequests()
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "https://ghe.example.com/acme/checkout-api/compare/1.4.0...1.5.0") {
		t.Errorf("pull requests = %+v", prs)
	}
	_, errOut, code = runPrbot(t, environ, "promote", "--repo", "acme/manifests", "--from", "staging", "--to", "devel")
	if code != 1 || !strings.Contains(errOut, `stage "devel" has no promoteFrom in pipeline.yaml`) {
		t.Errorf("promotion the pipeline lacks: exit %d, stderr %q", code, errOut)
	}
}

// A promotion into a locked stage, with locks from the reconciler's API
// (--lock-server): nothing is opened, and the check run on main says why.
func TestPrbotPromoteLockedStage(t *testing.T) {
	srv, environ := prbotRepo(t)
	srv.Repo("acme", "manifests").Commit("main", map[string]string{
		"pipeline.yaml": "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    lockPath: apps/staging\n    requires: {healthy: false}\n",
	}, "lock path for staging")
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Lock(context.Background(), lock.Lock{Path: "apps", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	h, err := lockapi.NewHandler(svc, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("lock-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runPrbot(t, environ, "promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging",
		"--lock-server", api.URL, "--lock-token-file", tokenFile)
	if code != 0 || !strings.HasPrefix(out, "devel → staging: blocked\nstage staging is locked: apps is locked until") {
		t.Errorf("exit %d, stdout %q, stderr %q; want blocked by the lock on apps", code, out, errOut)
	}
	if n := len(srv.Repo("acme", "manifests").PullRequests()); n != 0 {
		t.Errorf("%d pull requests opened into a locked stage", n)
	}
	var notes []string
	for _, cr := range srv.Repo("acme", "manifests").CheckRuns() {
		if cr.Name == "stagehand/promote-devel-staging" {
			notes = append(notes, cr.Conclusion+": "+cr.Summary)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "neutral: Not opening a promotion from devel to staging: stage staging is locked: apps is locked until") {
		t.Errorf("check runs stagehand/promote-devel-staging = %q, want one neutral run saying why", notes)
	}
}

func TestPrbotServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "prbot.yaml")
	if err := os.WriteFile(bad, []byte("github: {owner: acme, repo: manifests, tokenFile: /t}\nlisten: 8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runPrbot(t, nil, "serve", "--config", bad)
	if code != 1 || !strings.Contains(errOut, "github.webhookSecretFile is required") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runPrbot(t, nil, "serve", "--config", filepath.Join(dir, "missing.yaml"))
	if code != 1 || !strings.Contains(errOut, "reading prbot config") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestPrbotGitHubAppAuth(t *testing.T) {
	srv, environ := prbotRepo(t)
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, srv.App().PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	delete(environ, "GITHUB_TOKEN")
	out, errOut, code := runPrbot(t, environ, "promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging", "--dry-run",
		"--app-id", strconv.FormatInt(srv.App().ID(), 10), "--installation-id", strconv.FormatInt(srv.App().InstallationID(), 10), "--private-key-file", key)
	if code != 0 || !strings.Contains(out, "devel → staging: dry-run") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if srv.App().TokensIssued() == 0 {
		t.Error("no installation token was issued: the App credentials were not used")
	}
}

func TestPrbotServe(t *testing.T) {
	srv, environ := prbotRepo(t)
	dir := t.TempDir()
	write := func(name, content string) string { return gitserver.WriteFile(t, dir, name, content) }
	addr := testenv.FreeAddr(t)
	cfg := write("prbot.yaml", fmt.Sprintf(`github:
  apiURL: %s
  owner: acme
  repo: manifests
  tokenFile: %s
  webhookSecretFile: %s
listen: %q
resync: 0s
`, srv.URL(), write("token", environ["GITHUB_TOKEN"]), write("secret", "s3cret\n"), addr))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"serve", "--config", cfg, "--log-encoding", "console"})
		done <- command.Code(root.ExecuteContext(withPrbotDeps(ctx, prbotDeps{lookup: func(string) (string, bool) { return "", false }, now: time.Now})))
	}()
	// The first evaluation at start opens the promotion (staging does not require health).
	testenv.WaitFor(t, 20*time.Second, "the promotion pull request", func() bool { return len(srv.Repo("acme", "manifests").PullRequests()) == 1 })
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %v, %v", resp, err)
	}
	// A push webhook with a wrong signature is refused.
	d := srv.Webhooks("acme", "manifests").Push("main", "0000000000000000000000000000000000000000", srv.Repo("acme", "manifests").Branch("main"), "someone")
	if code, _, err := githubtest.Send(ctx, "http://"+addr+"/webhook/github", "wrong", d); err != nil || code != http.StatusUnauthorized {
		t.Errorf("forged push answered %d, %v; want 401", code, err)
	}
	if code, _, err := githubtest.Send(ctx, "http://"+addr+"/webhook/github", "s3cret", d); err != nil || code != http.StatusOK {
		t.Errorf("push answered %d, %v; want 200", code, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestPrbotBumpSurvivesTransientGitHubErrors(t *testing.T) {
	srv, environ := prbotRepo(t)
	srv.Faults().Inject(githubtest.Fault{Method: "PUT", Route: "/repos/{owner}/{repo}/contents/{path}", Status: 502})
	srv.Faults().Inject(githubtest.Fault{Method: "POST", Route: "/repos/{owner}/{repo}/pulls", Status: 429, RetryAfter: time.Second})
	out, errOut, code := runPrbot(t, environ, "bump", "--repo", "acme/manifests", "--env", "devel", "--service", "checkout-api", "--tag", "1.6.0")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "/acme/manifests/pull/1") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := srv.Faults().Left(); n != 0 {
		t.Errorf("%d injected faults were never hit", n)
	}
	if prs := srv.Repo("acme", "manifests").PullRequests(); len(prs) != 1 {
		t.Errorf("pull requests = %+v, want exactly one", prs)
	}
}

// TestPrbotUnknownManifestKeys: prbot reads manifest files as strictly as
// the reconciler by default (an unknown key fails the bump, naming file and
// key); --allow-unknown-keys, and manifest.allowUnknownKeys in the serve
// configuration, are reconciler.yaml's manifest.allowUnknownKeys.
func TestPrbotUnknownManifestKeys(t *testing.T) {
	srv, environ := prbotRepo(t)
	const file = "environments/devel/checkout-api.json"
	srv.Repo("acme", "manifests").Commit("main", map[string]string{
		file: "{\n  \"services\": [\n    {\"name\": \"checkout-api\", \"ownerTeam\": \"payments\", \"containers\": [{\"dockerTag\": \"1.5.0\"}]}\n  ]\n}\n",
	}, "an unknown key")
	bump := []string{"bump", "--repo", "acme/manifests", "--env", "devel", "--service", "checkout-api", "--tag", "1.6.0"}
	_, errOut, code := runPrbot(t, environ, bump...)
	if code != 1 || !strings.Contains(errOut, file) || !strings.Contains(errOut, `"ownerTeam"`) {
		t.Errorf("strict bump: exit %d, stderr %q; want 1 naming %s and \"ownerTeam\"", code, errOut, file)
	}
	if prs := srv.Repo("acme", "manifests").PullRequests(); len(prs) != 0 {
		t.Errorf("pull requests after the refused bump: %+v", prs)
	}
	if _, errOut, code := runPrbot(t, environ, append(bump, "--allow-unknown-keys")...); code != 0 {
		t.Errorf("bump --allow-unknown-keys: exit %d, stderr %q", code, errOut)
	}

	for _, tt := range []struct {
		yaml string
		want bool
	}{
		{yaml: "", want: false},
		{yaml: "manifest: {allowUnknownKeys: true}\n", want: true},
	} {
		c, err := config.ParsePrbot([]byte("github: {owner: acme, repo: manifests, tokenFile: /t, webhookSecretFile: /s}\n" + tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := serveFlags(c).allowUnknownKeys; got != tt.want {
			t.Errorf("serve config %q: allowUnknownKeys = %v, want %v", tt.yaml, got, tt.want)
		}
	}
}

func TestPrbotBumpVia(t *testing.T) {
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	srv.Repo("acme", "manifests").Commit("main", map[string]string{
		"pipeline.yaml":                        "stages:\n  - name: devel\n    acceptsBumps: true\n    bumpClaims: {ref: refs/heads/main}\n  - name: staging\n    promoteFrom: devel\n",
		"environments/devel/manifest.json":     `{"skipConfirmation": true, "includes": ["checkout-api.json", "payments-api.json"]}` + "\n",
		"environments/devel/checkout-api.json": "{\n  \"services\": [\n    {\"name\": \"checkout-api\", \"containers\": [{\"dockerTag\": \"1.5.0\"}]}\n  ]\n}\n",
		"environments/devel/payments-api.json": "{\n  \"services\": [\n    {\"name\": \"payments-api\", \"containers\": [{\"dockerTag\": \"2.0.0\"}]}\n  ]\n}\n",
		"environments/staging/manifest.json":   "{\"services\": []}\n",
	}, "seed")
	iss := oidctest.New(t)
	dir := t.TempDir()
	write := func(name, content string) string { return gitserver.WriteFile(t, dir, name, content) }
	addr := testenv.FreeAddr(t)
	cfg := write("prbot.yaml", fmt.Sprintf(`github:
  apiURL: %s
  owner: acme
  repo: manifests
  tokenFile: %s
  webhookSecretFile: %s
listen: %q
resync: 0s
oidc:
  issuers:
    - {url: %s, audience: stagehand, claims: github}
  caFile: %s
`, srv.URL(), write("token", srv.Token()), write("secret", "s3cret\n"), addr, iss.URL(), write("ca.pem", string(iss.CertPEM()))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"serve", "--config", cfg, "--log-encoding", "console"})
		done <- command.Code(root.ExecuteContext(withPrbotDeps(ctx, prbotDeps{lookup: func(string) (string, bool) { return "", false }, now: time.Now})))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	testenv.WaitFor(t, 20*time.Second, "prbot serve's /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})

	// GitHub Actions' ID token request service, as the runner exposes it.
	var requests []string
	actions := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.Query().Get("api-version")+" "+r.URL.Query().Get("audience"))
		if r.Header.Get("Authorization") != "bearer request-token" {
			http.Error(w, "bad request token", http.StatusUnauthorized)
			return
		}
		tok := iss.Sign(t, nil, iss.GitHubClaims("acme/checkout-api", r.URL.Query().Get("audience"), time.Now()))
		fmt.Fprintf(w, `{"count": 1, "value": %q}`, tok)
	}))
	t.Cleanup(actions.Close)
	environ := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/checkout-api",
		"ACTIONS_ID_TOKEN_REQUEST_URL":   actions.URL + "/_apis/distributedtask/hubs/build/plans/p/jobs/j/idtoken?api-version=2.0",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token",
	}
	via := "http://" + addr

	out, errOut, code := runPrbot(t, environ, "bump", "--via", via, "--env", "devel", "--service", "checkout-api", "--tag", "1.6.0", "-o", "json")
	if code != 0 {
		t.Fatalf("bump --via: exit %d: %s", code, errOut)
	}
	var res prbot.BumpResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not a bump result: %v\n%s", err, out)
	}
	if res.PR != 1 || res.File != "environments/devel/checkout-api.json" {
		t.Errorf("result = %+v", res)
	}
	if got, _ := srv.Repo("acme", "manifests").File(res.Branch, res.File); !strings.Contains(got, `"dockerTag": "1.6.0"`) {
		t.Errorf("file on the branch:\n%s", got)
	}
	if len(requests) != 1 || requests[0] != "2.0 stagehand" {
		t.Errorf("ID token requests = %q, want one for audience stagehand", requests)
	}

	// Another repository's file: refused, exit 1, the reason on stderr.
	_, errOut, code = runPrbot(t, environ, "bump", "--via", via, "--env", "devel", "--file", "payments-api.json", "--service", "payments-api", "--tag", "9.9.9")
	if code != 1 || !strings.Contains(errOut, "403 NotOwner") || !strings.Contains(errOut, "may bump only checkout-api.json, not payments-api.json") {
		t.Errorf("bump of another repository's file: exit %d, stderr %q", code, errOut)
	}
	if srv.Repo("acme", "manifests").Branch("stagehand/bump-devel-payments-api") != "" {
		t.Error("a refused bump created its branch")
	}

	// GitLab CI: the token is a job variable named by --token-env.
	gitlab := map[string]string{"CI_PROJECT_NAME": "checkout-api", "STAGEHAND_ID_TOKEN": iss.Sign(t, nil, iss.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))}
	out, errOut, code = runPrbot(t, gitlab, "bump", "--via", via, "--token-env", "STAGEHAND_ID_TOKEN", "--env", "devel", "--service", "checkout-api", "--tag", "1.7.0")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "/pull/1") {
		t.Errorf("bump --via --token-env: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// --wait after a keyless bump reads the pull request without GitHub
	// credentials: a repository GitHub does not show to anyone is refused,
	// exit 1, saying why and what to do instead.
	waiting := map[string]string{"CI_PROJECT_NAME": "checkout-api", "STAGEHAND_TOKEN": "read-only", "STAGEHAND_ID_TOKEN": iss.Sign(t, nil, iss.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))}
	out, errOut, code = runPrbot(t, waiting, "bump", "--via", via, "--token-env", "STAGEHAND_ID_TOKEN", "--env", "devel", "--service", "checkout-api", "--tag", "1.7.2",
		"--github-url", srv.URL(), "--wait", "--server", "http://127.0.0.1:1", "--interval", "10ms", "--timeout", "30s")
	if code != 1 || !strings.HasSuffix(strings.TrimSpace(out), "/pull/1") || !strings.Contains(errOut, "without GitHub credentials") || !strings.Contains(errOut, "answered 401") || !strings.Contains(errOut, "--auto-merge") {
		t.Errorf("bump --via --wait of a private repository: exit %d, want 1\nstdout %q\nstderr %q", code, out, errOut)
	}

	// A public repository shows the pull request to anyone: the wait
	// follows it, here past its --timeout (exit 2).
	srv.Repo("acme", "manifests").SetPublic()
	waiting["STAGEHAND_ID_TOKEN"] = iss.Sign(t, nil, iss.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))
	out, errOut, code = runPrbot(t, waiting, "bump", "--via", via, "--token-env", "STAGEHAND_ID_TOKEN", "--env", "devel", "--service", "checkout-api", "--tag", "1.7.3",
		"--github-url", srv.URL(), "--wait", "--server", "http://127.0.0.1:1", "--interval", "10ms", "--timeout", "1s")
	if code != 2 || !strings.Contains(out, "acme/manifests#1 open, waiting for it to merge") || !strings.Contains(errOut, "timed out") {
		t.Errorf("bump --via --wait of a public repository: exit %d, want 2\nstdout %q\nstderr %q", code, out, errOut)
	}

	// A redirect is not followed: the token stays with the --via URL.
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)
	redirect := httptest.NewServer(http.RedirectHandler(other.URL+"/steal", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	_, errOut, code = runPrbot(t, gitlab, "bump", "--via", redirect.URL, "--token-env", "STAGEHAND_ID_TOKEN", "--env", "devel", "--service", "checkout-api", "--tag", "1.7.1")
	if code != 1 || !strings.Contains(errOut, "307 Temporary Redirect") || !strings.Contains(errOut, "not followed") || len(leaked) != 0 {
		t.Errorf("bump --via a redirecting URL: exit %d, stderr %q, token sent on to the redirect's target %d times", code, errOut, len(leaked))
	}

	for _, tt := range []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"credentials flags", environ, []string{"--via", via, "--repo", "acme/manifests"}, "--repo does not apply with --via"},
		{"plain http to another host", environ, []string{"--via", "http://prbot.example.com"}, "want https (http only to localhost)"},
		{"no token anywhere", map[string]string{}, []string{"--via", via}, "no CI ID token"},
		{"no id-token permission", map[string]string{"GITHUB_ACTIONS": "true"}, []string{"--via", via}, "permissions: id-token: write"},
		{"an empty token variable", map[string]string{}, []string{"--via", via, "--token-env", "MY_TOKEN"}, "$MY_TOKEN is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bump", "--env", "devel", "--service", "checkout-api", "--tag", "1.8.0"}, tt.args...)
			_, errOut, code := runPrbot(t, tt.environ, args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

// recordLog is a serveLogger that keeps its lines.
type recordLog struct{ lines []string }

func (r *recordLog) Info(msg string, kv ...any) {
	r.lines = append(r.lines, fmt.Sprint(append([]any{"INFO ", msg}, kv...)...))
}
func (r *recordLog) Error(err error, msg string, kv ...any) {
	r.lines = append(r.lines, fmt.Sprint(append([]any{"ERROR ", msg, " ", err}, kv...)...))
}

func TestLogBumpNamesTheCaller(t *testing.T) {
	var log recordLog
	caller := &oidc.Caller{Issuer: "https://token.actions.githubusercontent.com", Repository: "acme/checkout-api", Ref: "refs/heads/main", Event: "push", Actor: "octocat", Run: "42", TokenID: "jti-secret"}
	body := &keyless.BumpBody{Environment: "devel", File: "payments-api.json", Service: "payments-api", Tag: "9.9.9"}
	logBump(&log, keyless.BumpLog{Caller: caller, Body: body, Status: 403, Reason: "NotOwner", Err: fmt.Errorf("repository acme/checkout-api may bump only checkout-api.json")})
	logBump(&log, keyless.BumpLog{Claimed: &oidc.Caller{Issuer: "https://gitlab.com", Repository: "evil/x"}, Status: 401, Reason: "Unauthorized", Err: oidc.ErrExpired})
	logBump(&log, keyless.BumpLog{Caller: caller, Body: body, Status: 502, Reason: "Failed", Err: fmt.Errorf("github down")})
	logBump(&log, keyless.BumpLog{Caller: caller, Body: body, Status: 200, Result: &prbot.BumpResult{PR: 3, Changed: true}})
	if len(log.lines) != 4 {
		t.Fatalf("lines = %q", log.lines)
	}
	for i, want := range [][]string{
		{"INFO bump refused", "acme/checkout-api", "octocat", "refs/heads/main", "NotOwner", "payments-api.json"},
		{"INFO bump refused", "Unauthorized", "token expired", "unverifiedRepository evil/x"},
		{"ERROR bump failed", "github down", "acme/checkout-api"},
		{"INFO bump accepted", "acme/checkout-api", "pr3"},
	} {
		for _, w := range want {
			if !strings.Contains(strings.ReplaceAll(log.lines[i], " ", ""), strings.ReplaceAll(w, " ", "")) {
				t.Errorf("line %d %q lacks %q", i, log.lines[i], w)
			}
		}
		if strings.Contains(log.lines[i], "jti-secret") {
			t.Errorf("line %d logs the token id: %q", i, log.lines[i])
		}
	}
}
