package daemon

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // client-go's leader election logs every acquisition
	os.Exit(testenv.Main(m, &env, testenv.WithRollouts(), testenv.WithCRDs("../../pkg/lock/crd")))
}
