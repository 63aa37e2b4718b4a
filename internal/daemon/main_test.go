package daemon

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane of the tests that need one.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // client-go's leader election logs every acquisition
	os.Exit(cluster.Main(m, testenv.WithRollouts(), testenv.WithAuditLog(),
		testenv.WithCRDs("../../pkg/lock/crd", "../crds/environments.stagehand.io.yaml")))
}
