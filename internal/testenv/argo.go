package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ArgoRolloutsEnv names a directory holding the Argo Rollouts controller
// (rollouts-controller) and its CRDs (crds/), as hack/rollouts/build.sh
// builds them; default <repo>/bin/rollouts.
const ArgoRolloutsEnv = "STAGEHAND_ROLLOUTS_BIN"

// WithArgoRollouts also runs the Argo Rollouts controller (built from the Go
// module proxy by hack/rollouts/build.sh, `make rollouts`) against the API
// server, with its CRDs installed: Rollouts, AnalysisTemplates and
// AnalysisRuns really progress, on kwok's pods. It implies WithRollouts.
func WithArgoRollouts() Option {
	return func(o *options) error {
		o.rollouts, o.argo = true, true
		return nil
	}
}

// argoDir finds the built controller, building it with hack/rollouts/build.sh
// when missing; like the control plane, a build is announced with its reason.
func argoDir(ctx context.Context, reason string) (string, error) {
	if d := os.Getenv(ArgoRolloutsEnv); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "rollouts")
	if argoBuilt(dir) {
		return dir, nil
	}
	fmt.Fprintf(os.Stderr, "testenv: building the Argo Rollouts controller into %s because %s (`make rollouts` builds it ahead)\n", dir, reason)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "rollouts", "build.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the Argo Rollouts controller with hack/rollouts/build.sh: %w", err)
	}
	return dir, nil
}

// argoBuilt reports whether dir holds the controller and its CRDs.
func argoBuilt(dir string) bool {
	for _, p := range []string{"rollouts-controller", "crds/rollout-crd.yaml", "crds/analysis-run-crd.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// argoInstalled reports whether the controller is there without building it.
func argoInstalled() bool {
	if d := os.Getenv(ArgoRolloutsEnv); d != "" {
		return argoBuilt(d)
	}
	root, err := RepoRoot()
	return err == nil && argoBuilt(filepath.Join(root, "bin", "rollouts"))
}

// startArgoRollouts installs the CRDs of the built version and starts the
// controller, waiting until its health endpoint answers.
func (e *Env) startArgoRollouts(ctx context.Context) error {
	dir, err := argoDir(ctx, e.opts.reason)
	if err != nil {
		return err
	}
	if err := e.installCRDs(ctx, []string{filepath.Join(dir, "crds")}); err != nil {
		return fmt.Errorf("installing the Argo Rollouts CRDs: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	p, err := e.runPath("rollouts-controller", filepath.Join(dir, "rollouts-controller"),
		"--kubeconfig="+e.Kubeconfig,
		"--leader-elect=false",
		"--healthzPort="+fmt.Sprint(ports[0]),
		"--metricsport="+fmt.Sprint(ports[1]),
		// kwok's pods are Ready at once: the controller's resyncs and
		// requeues need not wait long.
		"--rollout-resync=10",
		"--qps=200", "--burst=400",
		"--loglevel=info",
	)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, health{url: fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])})
}

// ArgoRollouts starts the Argo Rollouts controller (and installs its CRDs)
// on a control plane started without WithArgoRollouts, once, for the tests
// of a package whose other tests do not need it. When the controller is not
// built (and neither CI nor STAGEHAND_TESTENV_BUILD asks to build it) the
// test is skipped, saying so; a failed start fails it.
func (e *Env) ArgoRollouts(tb testing.TB) {
	tb.Helper()
	e.argoOnce.Do(func() {
		if e.opts.argo {
			return // started with the control plane
		}
		name, _, _ := strings.Cut(tb.Name(), "/")
		if !argoInstalled() && os.Getenv(BuildEnv) == "" && os.Getenv("CI") == "" {
			e.argoSkip = fmt.Sprintf("testenv: %s needs the Argo Rollouts controller, which is not built: run `make rollouts` (or `make test`), or set %s=1 to build it now", name, BuildEnv)
			return
		}
		e.opts.reason = name + " needs the Argo Rollouts controller"
		e.argoErr = e.startArgoRollouts(context.Background())
	})
	if e.argoSkip != "" {
		tb.Skip(e.argoSkip)
	}
	if e.argoErr != nil {
		tb.Fatalf("starting the Argo Rollouts controller: %v", e.argoErr)
	}
}
