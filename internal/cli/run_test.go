package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRunOnce: `reconciler run --once` proposes prod's plan (exit 0), and
// exits 1 naming the file when an environment's manifest is broken.
func TestRunOnce(t *testing.T) {
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "prod")
	ns := env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	write := func(envs ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, "source: {url: %q, branch: main, cacheDir: %q}\nenvironments:\n", url, filepath.Join(dir, "cache"))
		for _, e := range envs {
			fmt.Fprintf(&b, "  %s: {lockPath: apps/%s, targets: [{name: a, kubeconfig: %q, namespace: %s}]}\n", e, e, env.Kubeconfig, ns)
		}
		fmt.Fprintf(&b, "registry: {verifyDigests: false, pinDigests: false}\nlocks: {namespace: %s}\nstate: {namespace: %s, kubeconfig: %q}\n", ns, ns, env.Kubeconfig)
		if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write("prod")
	stdout, stderr, code := runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error")
	if code != 0 || !strings.Contains(stdout, "all environments reconciled") {
		t.Fatalf("run --once: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	st, err := state.NewStore(env.Clientset, ns).Load(context.Background(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending == nil || st.Pending.Revision != git.Head(t, "manifests", "main") {
		t.Errorf("prod pending after run --once = %+v, want the head's plan", st.Pending)
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Errorf("run --once applied prod without approval: %s", img)
	}

	git.Repo("manifests").Commit(t, "main", map[string]string{"environments/qa/manifest.json": `{"services": [`}, "broken qa")
	write("prod", "qa")
	_, stderr, code = runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "environment qa") || !strings.Contains(stderr, "environments/qa/manifest.json") {
		t.Errorf("run --once with a broken qa: exit %d, stderr %s; want exit 1 naming qa's file", code, stderr)
	}

	if _, stderr, code := runReconciler(t, "run", "--once"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("run without --config: exit %d, %s", code, stderr)
	}
}

// TestRunServes: `reconciler run` serves the API until its context ends, and
// then exits 0.
func TestRunServes(t *testing.T) {
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "prod")
	ns := env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("run-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A notification sink: its counter is served on /metrics beside the daemon's.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	for name, v := range map[string]string{"hook-url": hook.URL, "hook-key": "k"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
server: {listen: %q, apiTokenFile: token}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
notifications: [{name: hook, type: webhook, urlFile: hook-url, secretFile: hook-key, events: [plan.pending]}]
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, addr, ns, ns, env.Kubeconfig)
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"run", "--config", cfgPath, "--log-level", "error", "--identity", "test-replica"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer run-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/api/v1/environments/prod")
		if code == http.StatusOK && strings.Contains(body, `"planHash": "sha256:`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending plan served within 30s: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/readyz"); code != http.StatusOK || !strings.Contains(body, "leader") {
		t.Errorf("/readyz = %d %s", code, body)
	}
	for sent := `stagehand_notifications_total{result="sent",sink="hook"} 1`; ; time.Sleep(100 * time.Millisecond) {
		code, body := get("/metrics")
		if code == http.StatusOK && strings.Contains(body, sent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s: %d %s", sent, code, body)
		}
	}
	// The state's writes are served beside the daemon's metrics too.
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, `stagehand_state_writes_total{environment="`) ||
		!strings.Contains(body, `result="written"}`) {
		t.Errorf("/metrics = %d without stagehand_state_writes_total{…,result=\"written\"}:\n%s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of its context ending")
	}
}
