package api

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane of the tests whose locks are Lock objects on
// a real API server (the identity corpus); the others run without one.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, testenv.WithCRDs("../../pkg/lock/crd/locks.stagehand.io.yaml")))
}
