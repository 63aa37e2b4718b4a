package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane shared by this package's tests, started by the
// first that needs it; each test uses its own namespaces.
var cluster testenv.Shared

// binDir holds the binaries the tests build (see build).
var binDir string

func TestMain(m *testing.M) {
	// The chart's CRDs (deploy Locks) and the Prometheus Operator's
	// ServiceMonitor (a minimal copy) must exist before the chart applies.
	crds := []string{filepath.Join("testdata", "crds")}
	if root, err := RepoRoot(); err == nil {
		crds = append(crds, filepath.Join(root, "charts", "stagehand", "crds"))
	}
	// Rollouts really finish (controller-manager, scheduler, kwok), so that
	// `reconciler run --once` can wait for the rollouts it started.
	var err error
	if binDir, err = os.MkdirTemp("", "stagehand-chart-test-"); err != nil {
		panic(err)
	}
	// The audit log counts the reconciler's patches and state writes (TestInstallRelease).
	code := cluster.Main(m, testenv.WithRollouts(), testenv.WithCRDs(crds...), testenv.WithAuditLog())
	os.RemoveAll(binDir)
	os.Exit(code)
}
