package argorollouts_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var cluster testenv.Shared

// TestMain sets up one control plane with the Argo Rollouts controller for
// the package, started by the first test that needs it.
func TestMain(m *testing.M) { os.Exit(cluster.Main(m, testenv.WithArgoRollouts())) }
