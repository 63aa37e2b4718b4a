package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// FlaggerEnv names a directory holding Flagger (flagger) and its CRDs
// (crd.yaml), as hack/flagger/build.sh builds them; default <repo>/bin/flagger.
const FlaggerEnv = "STAGEHAND_FLAGGER_BIN"

// FlaggerInterval is the control loop interval the test's Flagger runs with
// (its default is 10s): each step of a Canary's analysis takes at least one.
const FlaggerInterval = "1s"

// WithFlagger also runs Flagger (built from the Go module proxy by
// hack/flagger/build.sh, `make flagger`) against the API server with its
// CRDs installed, with the kubernetes provider (no service mesh): Canaries
// really initialise, analyse (webhooks; no metrics server), promote and roll
// back on kwok's pods. Flagger copies every label of a target to its
// primary (-include-label-prefix=*), the case where a primary looks most
// like the workload it copies. It implies WithRollouts.
func WithFlagger() Option {
	return func(o *options) error {
		o.rollouts, o.flagger = true, true
		return nil
	}
}

// flaggerDir finds the built Flagger, building it with hack/flagger/build.sh
// when missing; like the control plane, a build is announced with its reason.
func flaggerDir(ctx context.Context, reason string) (string, error) {
	if d := os.Getenv(FlaggerEnv); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "flagger")
	if flaggerBuilt(dir) {
		return dir, nil
	}
	fmt.Fprintf(os.Stderr, "testenv: building Flagger into %s because %s (`make flagger` builds it ahead)\n", dir, reason)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "flagger", "build.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building Flagger with hack/flagger/build.sh: %w", err)
	}
	return dir, nil
}

// flaggerBuilt reports whether dir holds Flagger and its CRDs.
func flaggerBuilt(dir string) bool {
	for _, p := range []string{"flagger", "crd.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// flaggerInstalled reports whether Flagger is there without building it.
func flaggerInstalled() bool {
	if d := os.Getenv(FlaggerEnv); d != "" {
		return flaggerBuilt(d)
	}
	root, err := RepoRoot()
	return err == nil && flaggerBuilt(filepath.Join(root, "bin", "flagger"))
}

// startFlagger installs the CRDs of the built version and starts Flagger,
// waiting until its health endpoint answers.
func (e *Env) startFlagger(ctx context.Context) error {
	dir, err := flaggerDir(ctx, e.opts.reason)
	if err != nil {
		return err
	}
	if err := e.installCRDs(ctx, []string{filepath.Join(dir, "crd.yaml")}); err != nil {
		return fmt.Errorf("installing Flagger's CRDs: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	p, err := e.runPath("flagger", filepath.Join(dir, "flagger"),
		"-kubeconfig="+e.Kubeconfig,
		"-mesh-provider=kubernetes",
		"-port="+fmt.Sprint(ports[0]),
		// No metrics server: the analyses are webhooks. A port nothing
		// listens on answers at once, where the default name would wait
		// for a DNS lookup.
		"-metrics-server=http://127.0.0.1:"+fmt.Sprint(ports[1]),
		"-control-loop-interval="+FlaggerInterval,
		"-include-label-prefix=*",
		"-enable-leader-election=false",
		"-log-level=info",
	)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, health{url: fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])})
}
