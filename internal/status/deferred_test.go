package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// TestMatrixShowsDeferred: a skipConfirmation environment's plan deferred by its windows is never pending;
// the head names it (deferred, deferredRevision), the planHash a break-glass needs. Once something is
// pending or in flight, or the phase is another, it names none.
func TestMatrixShowsDeferred(t *testing.T) {
	const window = "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"
	deferred := func() *Environment {
		return &Environment{Name: "devel", Phase: PhaseDeferred,
			Observation: Observation{Revision: "r2", PlanHash: "h2", SkipConfirmation: true, Waiting: []string{window}}}
	}
	for _, tc := range []struct {
		name string
		e    func() *Environment
		want MatrixEnvironment
	}{
		{"deferred", deferred, MatrixEnvironment{Name: "devel", Phase: PhaseDeferred, Revision: "r2", Deferred: "h2", DeferredRevision: "r2",
			Waiting: []string{window}}},
		{"idle", func() *Environment { e := deferred(); e.Phase, e.Waiting = PhaseIdle, nil; return e },
			MatrixEnvironment{Name: "devel", Phase: PhaseIdle, Revision: "r2"}},
		{"applying", func() *Environment {
			e := deferred()
			e.Phase, e.Waiting, e.InFlight = PhaseApplying, nil, &approval.InFlight{Revision: "r2", PlanHash: "h2"}
			return e
		}, MatrixEnvironment{Name: "devel", Phase: PhaseApplying, Revision: "r2", Rolling: "h2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatrix([]*Environment{tc.e()}, time.UTC)
			if diff := cmp.Diff(tc.want, m.Environments[0]); diff != "" {
				t.Errorf("head (-want +got):\n%s", diff)
			}
		})
	}
}
