package cli

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane shared by the tests of this package that need
// one (one per test binary, started by the first). Add the options your
// commands need here; each test takes its own namespace with
// cluster.Env(t).Namespace(t).
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m,
		testenv.WithCRDs("../../pkg/lock/crd/locks.stagehand.io.yaml"), // the reconciler's lock service (Kubernetes storage)
	))
}

// testClient is the API client the commands build for server with the
// token of tokenFile (else the environment's, in command.UserToken's order).
func testClient(t *testing.T, server, tokenFile string) *api.Client {
	t.Helper()
	c, err := command.APIClient(server, tokenFile, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run executes the reconciler with args and returns stdout, stderr and the
// exit code the binary would use.
func runReconciler(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}
