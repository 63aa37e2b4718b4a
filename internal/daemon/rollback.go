package daemon

import (
	"context"
	"encoding/json"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// RollbackHook is called once a failed rollout of env has been rolled back
// and recorded as history entry entryID, with the cause: the rollback
// command's side opens the rollback pull request with a hold, so that git
// matches the cluster again. Its error is logged and counted; the rollback
// stands either way.
type RollbackHook func(ctx context.Context, env string, entryID int64, cause string) error

// entryOf is prop's history entry for out, with m, the manifest resolved at its revision.
func entryOf(prop approval.Proposal, out approval.Outcome, m *approval.Manifest) approval.Entry {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m}
	if out.Apply != nil {
		e.Workloads, _ = json.Marshal(out.Apply.Workloads) // plain strings and numbers
	}
	return e
}

// skipFailed reports whether s's revision was rolled back (its plans are not
// applied again), or plan would deploy again what a person rejected at its
// release (rejectedAgain), withdrawing a plan pending for it.
func (k *gatekeeper) skipFailed(ctx context.Context, st *state.EnvState, revision string, plan *reconcile.Plan) bool {
	f := st.Failed
	if f == nil || (f.Revision != revision && !rejectedAgain(st, plan)) {
		return false
	}
	k.supersede(ctx, st, revision)
	return true
}
