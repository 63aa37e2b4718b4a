package crds_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is a control plane with no CRD installed: Apply installs them.
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
