package argorollouts_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var cluster testenv.Shared

// TestMain sets up one control plane with the Argo Rollouts controller for
// the package, an audit log of every workload write and the deploy locks'
// CRD (the daemon's lock service), started by the first test that needs it.
func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, testenv.WithArgoRollouts(), testenv.WithAuditLog(), testenv.WithCRDs("../../pkg/lock/crd/locks.stagehand.io.yaml")))
}
