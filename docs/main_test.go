package docs_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane of the recipes shown working here (Helm beside
// Stagehand), started by the first test that needs it; the other tests of
// this package start nothing.
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, testenv.WithRollouts())) }
