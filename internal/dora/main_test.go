package dora_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane of the tests of the marks (Counter); the
// figures' tests run without one.
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
