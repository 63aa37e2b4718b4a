package bot

import (
	"io"
	"os"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane shared by the tests of this package that need
// one (TestPrbotBumpWait's reconciler, through clitest.WaitWorld), started by the
// first.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m,
		testenv.WithCRDs("../../../pkg/lock/crd/locks.stagehand.io.yaml"), // the reconciler's locks (clitest.WaitWorld)
	))
}

// newRoot is the prbot binary's tree as internal/cli composes it, but for
// the version command (internal/cli's own).
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "prbot", SilenceUsage: true, SilenceErrors: true}
	return command.Root(root, stdout, stderr, Commands())
}
