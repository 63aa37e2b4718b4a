package daemon

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, testenv.WithRollouts(), testenv.WithCRDs("../../pkg/lock/crd")))
}
