package pass

import (
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestNotApplying: an apply in flight dropped unrecorded leaves the
// environment awaiting the plan still pending, else at rest: Failed while
// the newest entry is the rollback that failed the revision. It starts
// nothing.
func TestNotApplying(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	rolledBack := approval.Entry{ID: 3, Revision: "r1", Result: approval.ResultRolledBack}
	for _, tc := range []struct {
		name string
		st   state.EnvState
		want status.Phase
	}{
		{"nothing pending", state.EnvState{}, status.PhaseIdle},
		{"a plan pending", state.EnvState{Pending: &approval.Pending{PlanHash: "sha256:p", ProposedAt: at}}, status.PhaseAwaitingApproval},
		{"a release pending is not a plan", state.EnvState{Pending: &approval.Pending{PlanHash: "sha256:p", Release: true}}, status.PhaseIdle},
		{"after a rollback", state.EnvState{Failed: &approval.RolledBack{Revision: "r1", EntryID: 3}, History: []approval.Entry{rolledBack}}, status.PhaseFailed},
		{"after a rollback and a newer apply", state.EnvState{Failed: &approval.RolledBack{Revision: "r1", EntryID: 3},
			History: []approval.Entry{{ID: 4, Revision: "r2", Result: approval.ResultSucceeded}, rolledBack}}, status.PhaseIdle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotApplying(&tc.st); got != tc.want {
				t.Errorf("NotApplying = %s, want %s", got, tc.want)
			}
			if got := NotApplying(&tc.st); !got.CanFollow(status.PhaseApplying) {
				t.Errorf("%s may not follow Applying", got)
			}
		})
	}
}
