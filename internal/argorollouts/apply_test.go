package argorollouts_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/cli"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
)

// TestApplyCommandPromotes: the one-shot `reconciler apply` of an
// environment whose rollouts.promote is auto promotes a canary paused at a
// step as the daemon does (the same Apply, with the same promotion): the
// command ends 0 with the Rollout Healthy at the new image, its progress
// says the step was promoted, and the Promoted Event names who ran it.
func TestApplyCommandPromotes(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	lockNS := env.Namespace(t)
	dyn := dynamicClient(t, env)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "environments", "test", "manifest.json")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(apiManifest("2", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "reconciler.yaml")
	if err := os.WriteFile(config, []byte(`
environments:
  test:
    lockPath: apps/test
    rollouts: {promote: auto}
    targets:
      - {name: a, kubeconfig: `+env.Kubeconfig+`, namespace: `+ns+`}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 2m}
locks: {storage: kubernetes, namespace: `+lockNS+`}
state: {kubeconfig: `+env.Kubeconfig+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITLAB_USER_LOGIN", "")
	t.Setenv("GITHUB_ACTOR", "carol")

	var out, errOut bytes.Buffer
	cmd := cli.NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"apply", "--config", config, "--env", "test", "--dir", dir, "--yes"})
	err := cmd.ExecuteContext(context.Background())
	if code := command.Code(err); code != 0 {
		t.Fatalf("reconciler apply: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "Rollout/api: rolling out (promoted: paused at step 2 of 3: waiting for promotion)") {
		t.Errorf("reconciler apply's progress does not say the step was promoted:\n%s", out.String())
	}
	if image, phase, _ := rolloutOf(t, dyn, ns, "api"); image != "reg.example.com/api:2" || phase != "Healthy" {
		t.Errorf("Rollout after reconciler apply: %s %s, want reg.example.com/api:2 Healthy", image, phase)
	}
	evs := events(t, env.Clientset, ns, "api", "Promoted")
	if len(evs) != 1 || !strings.Contains(evs[0], "plan approved by stagehand (carol)") {
		t.Errorf("Promoted Events on the Rollout: %q; want one naming stagehand (carol)", evs)
	}
}
