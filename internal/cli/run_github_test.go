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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRunWithGitHubApp: `reconciler run` with github.app wires the check-run gate and the webhook handler:
// prod's plan shows as a check run awaiting approval, and the Approve click, delivered to /webhook/github,
// patches the workload and completes the run with the per-workload results. Without github.webhookSecretFile it refuses to start.
func TestRunWithGitHubApp(t *testing.T) {
	env := cluster.Env(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("maria", "maintain")
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`}
	sha := git.Repo("manifests").Commit(t, "main", files, "prod")
	gh.Repo("acme", "manifests").MirrorCommit("main", sha, files, "prod")
	ns := env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")

	dir := t.TempDir()
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n"), "token": []byte("t\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.FreeAddr(t)
	config := func(webhookSecret string) string {
		cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 1s}
github:
  apiURL: %q
  owner: acme
  repo: manifests
  webhookSecretFile: %q
  app: {appID: %d, installationID: %d, privateKeyFile: app.pem}
  approvers: {minPermission: maintain}
server: {listen: %q, apiTokenFile: token}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, gh.URL(), webhookSecret, gh.App().ID(), gh.App().InstallationID(), addr, ns, ns, env.Kubeconfig)
		path := filepath.Join(dir, "reconciler.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	if _, stderr, code := runReconciler(t, "run", "--config", config(""), "--enable-leader-election=false"); code == 0 ||
		!strings.Contains(stderr, "github.webhookSecretFile") {
		t.Errorf("run with github.app but no webhook secret: exit %d, %s", code, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"run", "--config", config("hook"), "--log-level", "error", "--enable-leader-election=false"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	run := waitCheckRun(t, gh, func(r githubtest.CheckRun) bool { return r.Conclusion == "action_required" })
	d := gh.Webhooks("acme", "manifests").CheckRunAction(run.ID, "approve", "maria")
	code, body, err := githubtest.Send(ctx, "http://"+addr+"/webhook/github", "hook-secret", d)
	if err != nil || code != http.StatusOK {
		t.Fatalf("click: %d %s %v", code, body, err)
	}
	// The handler reaches the daemon's delivery record (approval.Deliveries): the click is recorded, for every
	// replica, before the webhook is answered.
	rec, err := cluster.Env(t).Clientset.CoreV1().ConfigMaps(ns).Get(ctx, state.DeliveriesConfigMap, metav1.GetOptions{})
	if err != nil || !strings.Contains(fmt.Sprint(rec.Data), d.ID) {
		t.Errorf("delivery %s not in the record %s/%s: %v %v", d.ID, ns, state.DeliveriesConfigMap, rec.Data, err)
	}
	// This control plane runs no controllers, so the rollout never finishes: the patched Deployment's run
	// completes as failure (rollout timed out) after 1s. What matters here is the wiring: click → apply → run.
	done2 := waitCheckRun(t, gh, func(r githubtest.CheckRun) bool { return r.Status == "completed" && r.Conclusion != "action_required" })
	if done2.Conclusion != "failure" || !strings.Contains(done2.Summary, "@maria") || !strings.Contains(done2.Summary, "Deployment/web") {
		t.Errorf("completed run %s, summary:\n%s", done2.Conclusion, done2.Summary)
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("deployed image %s, want example.com/web:2.0.0", img)
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

// waitCheckRun waits until the only check run stagehand/prod satisfies ok.
func waitCheckRun(t *testing.T, gh *githubtest.Server, ok func(githubtest.CheckRun) bool) githubtest.CheckRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var runs []githubtest.CheckRun
	for time.Now().Before(deadline) {
		runs = gh.Repo("acme", "manifests").CheckRuns()
		if len(runs) == 1 && runs[0].Name == "stagehand/prod" && ok(runs[0]) {
			return runs[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("check runs never reached the wanted state: %+v", runs)
	return githubtest.CheckRun{}
}
