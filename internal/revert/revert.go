package revert

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Store is where the rollback and its history entry are kept: the
// environment's state.
type Store interface {
	Update(ctx context.Context, env string, mutate func(*state.EnvState)) error
	HistoryLimit() int
}

// Failure is what went wrong, for the metrics.
type Failure int

const (
	// FailedState is a state read or write, or a record that did not decode.
	FailedState Failure = iota
	// FailedRollback is a restore that failed, or the hook.
	FailedRollback
)

// Config is what a Reverter uses.
type Config struct {
	Env      string
	Targets  []reconcile.Target
	LockPath string
	Store    Store
	// Restore is pkg/reconcile's Restore.
	Restore func(ctx context.Context, req reconcile.Request, undo reconcile.Undo, opts ...reconcile.Option) (*reconcile.Result, error)
	// Grace is ctx, cancelled only once the apply grace after it ended (the daemon's).
	Grace func(ctx context.Context) (context.Context, context.CancelFunc)
	// Completed tells the gate the outcome (and keeps it to report again when the gate refuses it).
	Completed func(ctx context.Context, prop approval.Proposal, out approval.Outcome)
	// Hook (may be nil) hears of each rollback recorded (the daemon's RollbackHook).
	Hook func(ctx context.Context, env string, entryID int64, cause string) error
	Now  func() time.Time
	Log  logr.Logger
	// Failed (may be nil) hears of each failure, logged here.
	Failed func(Failure)
	// Moved (may be nil) hears that the phase moved (RollingBack).
	Moved func()
}

// Reverter rolls back the failed applies of one environment.
type Reverter struct{ c Config }

// New is the Reverter of c.Env.
func New(c Config) *Reverter { return &Reverter{c: c} }

func (r *Reverter) failed(f Failure) {
	if r.c.Failed != nil {
		r.c.Failed(f)
	}
}

// Start undoes the apply whose history entry would be e, for cause: it
// records the rollback in the state (ending the apply's in-flight record in
// the same write), restores the images the apply replaced, waits for that
// rollout and records e as rolled back (Continue). It is the one path for
// every cause: a failed rollout, and a failed verification of an apply that
// succeeded (e then is its entry, cause the verification's).
func (r *Reverter) Start(ctx context.Context, e approval.Entry, cause string) error {
	rb := state.Rollback{Entry: e, Cause: cause, At: r.c.Now().UTC()}
	err := r.c.Store.Update(ctx, r.c.Env, func(st *state.EnvState) {
		rb.Before = appliedBefore(st.History, e.Revision)
		if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
			st.InFlight = nil
		}
		st.Rollback, st.Phase = &rb, status.PhaseRollingBack
	})
	if err != nil {
		r.failed(FailedState)
		return fmt.Errorf("recording the rollback of revision %s before starting it: %w", approval.ShortRevision(e.Revision), err)
	}
	if r.c.Moved != nil {
		r.c.Moved() // RollingBack
	}
	r.c.Log.Info("rolling back a failed apply", "environment", r.c.Env, "revision", approval.ShortRevision(e.Revision), "cause", cause)
	return r.Continue(ctx, rb)
}

// Continue restores what rb's apply replaced and records it: the history
// entry (rolled back, with the cause and how the restore went), the failed
// revision (not applied again), the Rollback cleared, all in one write; then
// the gate hears the outcome and the hook is called. A shutdown during the
// restore leaves rb in the state for the next leader, after the apply grace.
func (r *Reverter) Continue(ctx context.Context, rb state.Rollback) error {
	env, e := r.c.Env, rb.Entry
	log := r.c.Log.WithValues("environment", env, "revision", approval.ShortRevision(e.Revision), "planHash", e.PlanHash)
	var changes []reconcile.Change
	if err := json.Unmarshal(e.Changes, &changes); err != nil {
		// Nothing can be restored without them; record what happened.
		r.failed(FailedState)
		log.Error(err, "decoding the changes of the apply to roll back")
	}
	rev := rb.Before
	if rev == "" {
		rev = e.Revision
	}
	req := reconcile.Request{Environment: &manifest.Environment{Name: env}, Revision: rev, Targets: r.c.Targets, LockPath: r.c.LockPath}
	gctx, cancel := r.c.Grace(ctx)
	res, err := r.c.Restore(gctx, req, reconcile.Undo{Changes: changes, Reason: rb.Cause})
	cancel()
	if ctx.Err() != nil {
		return fmt.Errorf("rolling back revision %s: interrupted by shutdown; the next leader continues: %w", approval.ShortRevision(e.Revision), ctx.Err())
	}
	restored, msg := summary(rb.Cause, res, err)
	if err != nil || res.Failed() {
		r.failed(FailedRollback)
	}
	now := r.c.Now().UTC()
	e.Result, e.Message, e.Finished = approval.ResultRolledBack, msg, now
	var id int64
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	uerr := r.c.Store.Update(rctx, env, func(st *state.EnvState) {
		if st.Rollback == nil || st.Rollback.Entry.PlanHash != e.PlanHash || !st.Rollback.At.Equal(rb.At) {
			id = 0 // recorded by someone else already
			return
		}
		id = st.Record(e, r.c.Store.HistoryLimit())
		st.Rollback, st.Phase = nil, status.PhaseFailed
		st.Failed = &approval.RolledBack{Revision: e.Revision, PlanHash: e.PlanHash, Cause: rb.Cause, EntryID: id, At: now}
		if st.Pending != nil && st.Pending.Revision == e.Revision {
			st.Pending = nil
		}
	})
	if uerr != nil {
		r.failed(FailedState)
		return fmt.Errorf("recording the rollback of revision %s: %w", approval.ShortRevision(e.Revision), uerr)
	}
	if id == 0 {
		return nil
	}
	log.Info("rolled back", "entry", id, "workloads", restored, "message", msg)
	prop, out, err := outcome(env, e, changes)
	if err != nil {
		r.failed(FailedState)
		log.Error(err, "reporting the rollback without the failed apply's workload results", "entry", id)
	}
	r.c.Completed(rctx, prop, out)
	if r.c.Hook != nil {
		if err := r.c.Hook(rctx, env, id, rb.Cause); err != nil {
			r.failed(FailedRollback)
			log.Error(err, "calling the rollback hook (the rollback pull request)", "entry", id)
		}
	}
	return nil
}

// Cause says whether the apply of prop that ended as out (res; nil
// when the run was continued by another process or after its release
// approval) is rolled back, and why, in an environment whose failed
// rollouts roll back (onFailedRollout: rollback): a workload failed (a
// rollout past its deadline or not ready in time, or a patch; a blocked
// workload alone is not a failure of what was applied), or
// everything rolled out and a test or evaluation task of the delivery
// sequence after it failed, or its release was rejected (rejected: the
// release approval's message, "" when it was not rejected).
func Cause(prop approval.Proposal, out approval.Outcome, res *reconcile.Result, rejected string) (string, bool) {
	if out.Result != approval.ResultFailed {
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
	if rejected != "" {
		return "release " + rejected, true
	}
	return "verification failed: " + out.Message, true
}

// appliedBefore is the revision of the newest entry of history that applied
// something (succeeded, or interrupted and continued by the next leader) and
// is not rev: what a rollback of rev puts back.
func appliedBefore(history []approval.Entry, rev string) string {
	for _, e := range history {
		if (e.Result == approval.ResultSucceeded || e.Result == approval.ResultInterrupted) && e.Revision != rev {
			return e.Revision
		}
	}
	return ""
}

// summary says why the apply was rolled back and how the restore went, and
// counts the workloads restored.
func summary(cause string, res *reconcile.Result, err error) (int, string) {
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
		return restored, fmt.Sprintf("%s; rolled back %d workload(s) to the images before, %d not: %s", cause, restored, len(failed), approval.JoinMax(failed, 5))
	}
	return restored, fmt.Sprintf("%s; rolled back %d workload(s) to the images before", cause, restored)
}

// outcome is what the gate hears of the rolled-back entry e: its plan
// (environment, revision, planHash, changes, decoded from e by the caller)
// and the failed apply's per-workload results, with the rollback in the
// message. An error says the workload results did not decode: the outcome
// is complete but for them.
func outcome(env string, e approval.Entry, changes []reconcile.Change) (approval.Proposal, approval.Outcome, error) {
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
