package cli

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// env is the control plane shared by every test of this package (one per test
// binary). Add the options your commands need here; each test takes its own
// namespace with env.Namespace(t).
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env,
		testenv.WithCRDs("../../pkg/lock/crd/locks.stagehand.io.yaml"), // reconciler lock|unlock|check|prune|list
	))
}
