package wire_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the package's control plane, started by the first test that
// needs one (the tests of pure configuration never do).
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
