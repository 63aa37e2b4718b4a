package ui_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/ui"
)

// browse starts headless Chromium (see chromium_test.go).
var browse = ui.Browse

// cluster is the control plane of the browser tests: workloads really roll
// out (kwok), and locks are the CRD's.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, testenv.WithRollouts(), testenv.WithCRDs("../../pkg/lock/crd/locks.stagehand.io.yaml")))
}
