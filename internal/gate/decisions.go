package gate

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The judgements the gate step takes from the state's records alone:
// whether a plan was rejected or rolled back before, whether a plan is part
// of one approved, who a rollback's plan is applied as (the phase that
// follows a dropped apply is pass.NotApplying). They read values and touch
// nothing, so their tests start no control plane.

// rejected reports whether the plan planHash at revision was rejected: its
// rejection is in history.
func rejected(history []approval.Entry, revision, planHash string) bool {
	for _, e := range history {
		if e.Result == approval.ResultRejected && e.Revision == revision && e.PlanHash == planHash {
			return true
		}
	}
	return false
}

// subset reports whether every change in part was approved in whole: same
// workload, container and target image (the running image, From, may differ
// when an apply was cut short).
func subset(part, whole []reconcile.Change) bool {
	type key struct {
		w         reconcile.WorkloadKey
		container string
		to        string
	}
	in := make(map[key]bool, len(whole))
	for _, c := range whole {
		in[key{c.Key(), c.Container, c.To}] = true
	}
	for _, c := range part {
		if !in[key{c.Key(), c.Container, c.To}] {
			return false
		}
	}
	return true
}

// rejectedAgain reports whether plan deploys nothing but what the rollback
// in st put back after a person rejected its release: a revision newer than
// the rejected one that changes nothing of it (a commit for another
// environment, made while the release waited) does not undo the decision.
// (After a failed rollout, a newer revision is applied again as before.)
func rejectedAgain(st *state.EnvState, plan *reconcile.Plan) bool {
	f := st.Failed
	if f == nil || plan == nil || plan.Empty() || !strings.HasPrefix(f.Cause, "release rejected by ") {
		return false
	}
	for _, e := range st.History {
		if e.ID != f.EntryID {
			continue
		}
		var rejected []reconcile.Change
		if json.Unmarshal(e.Changes, &rejected) != nil {
			return false
		}
		return subset(plan.Changes, rejected)
	}
	return false
}

// pinnedBy is who placed pin when plan is its plan and nothing else (changes,
// all of them the pin's: approval.Pin.Foreign), so that a skipConfirmation
// environment's history names the person who rolled back; "" otherwise.
func pinnedBy(pin *approval.Pin, plan *reconcile.Plan) string {
	if pin == nil || plan == nil || len(plan.Changes) == 0 || len(pin.Foreign(plan.Changes)) > 0 {
		return ""
	}
	return pin.By
}

// skipFailed reports whether s's revision was rolled back (its plans are not
// applied again), or plan would deploy again what a person rejected at its
// release (rejectedAgain), withdrawing a plan pending for it.
func (k *Keeper) skipFailed(ctx context.Context, st *state.EnvState, revision string, plan *reconcile.Plan) bool {
	f := st.Failed
	if f == nil || (f.Revision != revision && !rejectedAgain(st, plan)) {
		return false
	}
	k.Supersede(ctx, st, revision)
	return true
}
