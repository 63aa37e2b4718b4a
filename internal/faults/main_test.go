package faults

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the suite's control plane: workloads really roll out (kwok), and
// the API server's audit log counts every write to them; locks may live in
// Kubernetes (the CRD of pkg/lock).
var cluster testenv.Shared

func TestMain(m *testing.M) {
	code := cluster.Main(m, testenv.WithRollouts(), testenv.WithAuditLog(), testenv.WithCRDs("../../pkg/lock/crd"))
	table.print(os.Stdout)
	reconcilerBin.remove() // some 100 MB each, left in $TMPDIR by every run otherwise
	prbotBin.remove()
	os.Exit(code)
}
