package verify_test

import (
	"os"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, testenv.WithRollouts())) }
