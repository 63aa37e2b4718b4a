package cli

import (
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestStatusShowsDeferred: `reconciler status` names a skipConfirmation plan its deploy windows deferred
// (nothing is pending), by the planHash that `reconciler break-glass --plan-hash` needs.
func TestStatusShowsDeferred(t *testing.T) {
	m := status.Matrix{Environments: []status.MatrixEnvironment{{Name: "devel", Phase: status.PhaseDeferred, Deferred: "sha256:h2",
		DeferredRevision: "3f2a9c1d5e6f7a8b", Waiting: []string{"waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"}}}}
	var b strings.Builder
	if err := printMatrix(&b, m); err != nil {
		t.Fatal(err)
	}
	if want := "devel: ⏸ deferred (skipConfirmation): revision 3f2a9c1d5e6f, plan sha256:h2\n"; !strings.Contains(b.String(), want) {
		t.Errorf("status does not say %q:\n%s", want, b.String())
	}
}
