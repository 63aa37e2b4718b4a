package daemon

import (
	"context"
	"encoding/json"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// RollbackHook is called once a failed rollout of env has been rolled back
// and recorded as history entry entryID, with the cause: the rollback
// command's side opens the rollback pull request with a hold, so that git
// matches the cluster again. Its error is logged and counted; the rollback
// stands either way.
type RollbackHook func(ctx context.Context, env string, entryID int64, cause string) error

// rollbackCause says whether the apply of prop that ended as out (res; nil
// when the run was continued by another process or after its release
// approval) is rolled back, and why: the environment says so and a
// workload failed (a rollout past its deadline or not ready in time, or a
// patch; a blocked workload alone is not a failure of what was applied), or
// everything rolled out and a test or evaluation task of the delivery
// sequence after it failed, or its release was rejected.
func (w *worker) rollbackCause(prop approval.Proposal, out approval.Outcome, res *reconcile.Result) (string, bool) {
	if !w.rollback || out.Result != approval.ResultFailed {
		return "", false
	}
	if res != nil {
		for _, wr := range res.Workloads {
			if wr.Outcome == reconcile.OutcomeFailed {
				return "rollout failed: " + out.Message, true
			}
		}
	}
	// Something was applied: the workloads res patched or, continued, the
	// changes of the apply in flight.
	applied := (res != nil && len(res.Workloads) > 0) || (res == nil && len(prop.Plan.Changes) > 0)
	if out.Sequence != promote.ResultFail || !applied {
		return "", false
	}
	if msg, ok := w.seq.ReleaseRejected(prop.Revision); ok {
		return "release " + msg, true
	}
	return "verification failed: " + out.Message, true
}

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
func (w *worker) skipFailed(ctx context.Context, st *state.EnvState, revision string, plan *reconcile.Plan) bool {
	f := st.Failed
	if f == nil || (f.Revision != revision && !rejectedAgain(st, plan)) {
		return false
	}
	w.supersede(ctx, st, revision)
	return true
}
