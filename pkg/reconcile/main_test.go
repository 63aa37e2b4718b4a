package reconcile_test

import (
	"flag"
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var cluster testenv.Shared

// TestMain sets up one control plane for the package, started by the first
// test that needs it. Tests need rollouts (controller-manager, scheduler,
// kwok); a benchmarks-only run (-run '^$') starts the API server alone so
// controllers do not compete with the measurement on a small machine.
func TestMain(m *testing.M) {
	flag.Parse()
	opts := []testenv.Option{testenv.WithCRDs("../lock/crd/locks.stagehand.io.yaml")} // Kubernetes lock storage
	if run := flag.Lookup("test.run"); run == nil || run.Value.String() != "^$" {
		opts = append(opts, testenv.WithRollouts())
	}
	os.Exit(cluster.Main(m, opts...))
}
