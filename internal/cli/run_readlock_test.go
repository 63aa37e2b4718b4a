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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestRunReadAndLockArePolicy: `reconciler run` with github.app and a tokens
// file applies the web page's read rule and the lock rule to GitHub logins
// on the API, with locks as Lock objects on the real API server: a
// stranger's GitHub token reads no history and takes no lock on prod (403,
// no Lock object); a GitHub login named like a token (ci-locker) does not
// remove that token's lock (403, the lock stays, no admin Event); a ten-year
// freeze is refused naming the maximum; a hold needs lock:admin.
func TestRunReadAndLockArePolicy(t *testing.T) {
	env := cluster.Env(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("maria", "maintain")
	gh.Repo("acme", "manifests").SetPermission("ci-locker", "maintain") // a person whose login is spelled like the token
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`}
	sha := git.Repo("manifests").Commit(t, "main", files, "prod")
	gh.Repo("acme", "manifests").MirrorCommit("main", sha, files, "prod")
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "web", "example.com/web:1.0.0")

	const lockerToken = "ci-locker-run-token-0001"
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"),
		"tokens.yaml": []byte("- {name: ci-locker, token: " + lockerToken + ", scopes: [lock]}\n"),
	} {
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
server: {listen: %q, tokensFile: %q}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, gh.URL(), gh.App().ID(), gh.App().InstallationID(), addr, filepath.Join(dir, "tokens.yaml"), ns, ns, env.Kubeconfig)
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
	send := func(method, path, tok, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, server+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	maria, mallory, person := gh.OAuth().UserToken("maria"), gh.OAuth().UserToken("mallory"), gh.OAuth().UserToken("ci-locker")
	testenv.WaitFor(t, 30*time.Second, "prod's history over the API", func() bool {
		code, _ := send("GET", "/api/v1/environments/prod/history", maria, "")
		return code == 200
	})
	kc, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	k, err := lock.NewKubernetesForConfig(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	lockAt := func(path string) bool {
		t.Helper()
		_, err := k.Get(ctx, path)
		return err == nil
	}

	for _, tc := range []struct {
		name, method, path, tok, body string
		wantCode                      int
		wantBody                      string
	}{
		{"a stranger reads the history", "GET", "/api/v1/environments/prod/history", mallory, "", 403,
			"needs scope read: reading needs a role on the manifests repository (read or higher): @mallory has no access to acme/manifests"},
		{"a stranger locks prod", "POST", "/api/v1/locks", mallory, `{"path":"apps/prod","type":"freeze","duration":"1h"}`, 403,
			"mallory (github) may not lock"},
		{"the token locks", "POST", "/api/v1/locks", lockerToken, `{"path":"apps/prod/ci","type":"deploy","duration":"1h"}`, 201,
			`"author":"token:ci-locker"`},
		{"a login named like the token unlocks it", "DELETE", "/api/v1/locks/apps/prod/ci?type=deploy", person, "", 403,
			"github:ci-locker may remove only their own locks, and apps/prod/ci (deploy by token:ci-locker) is not"},
		{"an approver's ten-year freeze", "POST", "/api/v1/locks", maria, `{"path":"apps/prod","type":"freeze","duration":"3650d"}`, 400,
			"a lock of type freeze lasts at most 30d"},
		{"an approver's hold", "POST", "/api/v1/locks", maria, `{"path":"apps/prod/hold","type":"hold","duration":"1h"}`, 403,
			"are placed by rollbacks, or by a caller with lock:admin"},
	} {
		if code, body := send(tc.method, tc.path, tc.tok, tc.body); code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: %s %s = %d %s, want %d containing %q", tc.name, tc.method, tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
	if lockAt("apps/prod") || lockAt("apps/prod/hold") {
		t.Error("a refused lock exists as a Lock object")
	}
	if !lockAt("apps/prod/ci") {
		t.Error("the token's lock is gone after a refused unlock")
	}
	evs, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + lock.UnlockedReason})
	if err != nil || len(evs.Items) != 0 {
		t.Errorf("admin unlock Events = %v, %v; want none", evs, err)
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
