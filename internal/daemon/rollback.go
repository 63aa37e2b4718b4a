package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
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
	if msg, ok := w.releaseRejected(prop.Revision); ok {
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

// rollBack undoes the apply whose history entry would be e, for cause: it
// records the rollback in the state (ending the apply's in-flight record in
// the same write), restores the images the apply replaced, waits for that
// rollout and records e as rolled back (see continueRollback). It is the one
// path for every cause: a failed rollout, and a failed verification of an
// apply that succeeded (e then is its entry, cause the verification's).
func (w *worker) rollBack(ctx context.Context, e approval.Entry, cause string) error {
	rb := state.Rollback{Entry: e, Cause: cause, At: w.now().UTC()}
	err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		rb.Before = lastApplied(st.History)
		if rb.Before == e.Revision {
			rb.Before = lastAppliedBefore(st.History, e.Revision)
		}
		if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
			st.InFlight = nil
		}
		st.Rollback, st.Phase = &rb, status.PhaseRollingBack
	})
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		return fmt.Errorf("recording the rollback of revision %s before starting it: %w", short(e.Revision), err)
	}
	w.rec.moved() // RollingBack
	w.log.Info("rolling back a failed apply", "environment", w.env, "revision", short(e.Revision), "cause", cause)
	return w.continueRollback(ctx, rb)
}

// continueRollback restores what rb's apply replaced and records it: the
// history entry (rolled back, with the cause and how the restore went), the
// failed revision (not applied again), the Rollback cleared, all in one
// write; then the gate hears the outcome and the hook is called. A shutdown
// during the restore leaves rb in the state for the next leader, after the
// apply grace.
func (w *worker) continueRollback(ctx context.Context, rb state.Rollback) error {
	e := rb.Entry
	log := w.log.WithValues("environment", w.env, "revision", short(e.Revision), "planHash", e.PlanHash)
	var changes []reconcile.Change
	if err := json.Unmarshal(e.Changes, &changes); err != nil {
		// Nothing can be restored without them; record what happened.
		w.metrics.fail(w.env, reasonState)
		log.Error(err, "decoding the changes of the apply to roll back")
	}
	rev := rb.Before
	if rev == "" {
		rev = e.Revision
	}
	req := reconcile.Request{Environment: &manifest.Environment{Name: w.env}, Revision: rev, Targets: w.targets, LockPath: w.lockPath}
	gctx, cancel := w.graceful(ctx)
	res, err := w.restore(gctx, req, changes, rb.Cause)
	cancel()
	if ctx.Err() != nil {
		return fmt.Errorf("rolling back revision %s: interrupted by shutdown; the next leader continues: %w", short(e.Revision), ctx.Err())
	}
	restored, msg := rollbackSummary(rb.Cause, res, err)
	if err != nil || res.Failed() {
		w.metrics.fail(w.env, reasonRollback)
	}
	now := w.now().UTC()
	e.Result, e.Message, e.Finished = approval.ResultRolledBack, msg, now
	var id int64
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	uerr := w.store.Update(rctx, w.env, func(st *state.EnvState) {
		if st.Rollback == nil || st.Rollback.Entry.PlanHash != e.PlanHash || !st.Rollback.At.Equal(rb.At) {
			id = 0 // recorded by someone else already
			return
		}
		id = st.Record(e, w.store.HistoryLimit())
		st.Rollback, st.Phase = nil, status.PhaseFailed
		st.Failed = &approval.RolledBack{Revision: e.Revision, PlanHash: e.PlanHash, Cause: rb.Cause, EntryID: id, At: now}
		if st.Pending != nil && st.Pending.Revision == e.Revision {
			st.Pending = nil
		}
	})
	if uerr != nil {
		w.metrics.fail(w.env, reasonState)
		return fmt.Errorf("recording the rollback of revision %s: %w", short(e.Revision), uerr)
	}
	if id == 0 {
		return nil
	}
	log.Info("rolled back", "entry", id, "workloads", restored, "message", msg)
	prop, out, err := rolledBackOutcome(w.env, e, changes)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		log.Error(err, "reporting the rollback without the failed apply's workload results", "entry", id)
	}
	w.completed(rctx, prop, out)
	if w.rollbackHook != nil {
		if err := w.rollbackHook(rctx, w.env, id, rb.Cause); err != nil {
			w.metrics.fail(w.env, reasonRollback)
			log.Error(err, "calling the rollback hook (the rollback pull request)", "entry", id)
		}
	}
	return nil
}

// graceful is ctx, but cancelled only the apply grace after ctx ends, so
// that patches in flight finish and the state is recorded; at once when ctx
// ended because this replica lost its Lease (lease.ErrLost): another replica
// may be applying already, and no patch may follow.
func (w *worker) graceful(ctx context.Context) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			cancel()
			return
		}
		t := time.AfterFunc(w.applyGrace, cancel)
		context.AfterFunc(gctx, func() { t.Stop() })
	})
	return gctx, func() { stop(); cancel() }
}

// rollbackSummary says why the apply was rolled back and how the restore
// went, and counts the workloads restored.
func rollbackSummary(cause string, res *reconcile.Result, err error) (int, string) {
	switch {
	case err != nil:
		return 0, fmt.Sprintf("%s; rolling back failed, the workloads may still run the new images: %v", cause, err)
	case res == nil || len(res.Workloads) == 0:
		return 0, fmt.Sprintf("%s; rolled back: the workloads run the images from before the apply (nothing was left to patch)", cause)
	}
	restored := 0
	var failed []string
	for _, wr := range res.Workloads {
		if wr.Outcome.Applied() {
			restored++
		} else {
			failed = append(failed, fmt.Sprintf("%s %s: %s", wr.WorkloadKey, wr.Outcome, wr.Message))
		}
	}
	if len(failed) > 0 {
		return restored, fmt.Sprintf("%s; rolled back %d workload(s) to the images before, %d not: %s", cause, restored, len(failed), joinMax(failed, 5))
	}
	return restored, fmt.Sprintf("%s; rolled back %d workload(s) to the images before", cause, restored)
}

// rolledBackOutcome is what the gate hears of the rolled-back entry e: its
// plan (environment, revision, planHash, changes, decoded from e by the
// caller) and the failed apply's per-workload results, with the rollback in
// the message. An error says the workload results did not decode: the
// outcome is complete but for them.
func rolledBackOutcome(env string, e approval.Entry, changes []reconcile.Change) (approval.Proposal, approval.Outcome, error) {
	plan := &reconcile.Plan{Environment: env, Revision: e.Revision, PlanHash: e.PlanHash, HistoryRewritten: e.HistoryRewritten, Changes: changes}
	res := &reconcile.Result{Plan: plan}
	var err error
	if len(e.Workloads) > 0 {
		if uerr := json.Unmarshal(e.Workloads, &res.Workloads); uerr != nil {
			res.Workloads = nil
			err = fmt.Errorf("decoding the workload results of the apply rolled back: %w", uerr)
		}
	}
	out := approval.Outcome{Result: approval.ResultRolledBack, Approver: e.Approver, Message: e.Message, Apply: res,
		Started: e.Started, Finished: e.Finished}
	return approval.Proposal{Environment: env, Revision: e.Revision, Plan: plan}, out, err
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
