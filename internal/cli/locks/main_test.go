package locks

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane shared by the tests of this package that need
// one (the Lock objects of --storage kubernetes and of the API's storage),
// started by the first.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m,
		testenv.WithCRDs("../../../pkg/lock/crd/locks.stagehand.io.yaml"),
	))
}
