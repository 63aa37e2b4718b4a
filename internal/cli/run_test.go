package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

// TestRunOnce: `reconciler run --once` proposes prod's plan (exit 0), and
// exits 1 naming the file when an environment's manifest is broken.
func TestRunOnce(t *testing.T) {
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Commit(t, "manifests", "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "prod")
	ns := env.Namespace(t)
	createWeb(t, ns)
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
	st, err := daemon.NewStore(env.Clientset, ns).Load(context.Background(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending == nil || st.Pending.Revision != git.Head(t, "manifests", "main") {
		t.Errorf("prod pending after run --once = %+v, want the head's plan", st.Pending)
	}
	if img := deployedImage(t, ns); img != "example.com/web:1.0.0" {
		t.Errorf("run --once applied prod without approval: %s", img)
	}

	git.Commit(t, "manifests", "main", map[string]string{"environments/qa/manifest.json": `{"services": [`}, "broken qa")
	write("prod", "qa")
	_, stderr, code = runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "environment qa") || !strings.Contains(stderr, "environments/qa/manifest.json") {
		t.Errorf("run --once with a broken qa: exit %d, stderr %s; want exit 1 naming qa's file", code, stderr)
	}

	if _, stderr, code := runReconciler(t, "run", "--once"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("run without --config: exit %d, %s", code, stderr)
	}
}
