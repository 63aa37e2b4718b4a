package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// applySteps are the steps of an apply a decision lets through (see pass.go).
func (w *worker) applySteps() []step {
	return []step{{stepApply, w.applyStep}, {stepVerify, w.verifyStep}, {stepRelease, w.releaseStep}, {stepRecord, w.recordStep}}
}

// stepsFrom are the pass's steps from first on.
func (w *worker) stepsFrom(first stepName) []step {
	all := w.passSteps()
	for i, s := range all {
		if s.name == first {
			return all[i:]
		}
	}
	return nil
}

// applyStep applies the job's plan, recording it as in flight first (the
// history follows in recordStep). A shutdown lets the patches in flight
// finish (up to the apply grace) and records the apply as interrupted; the
// in-flight record lets the next leader continue what is left without
// asking again. The job's started (if not nil: a decision) is called once
// the apply is under way: pkg/reconcile planned again, found the same
// planHash and patched a first workload (or finished).
//
// Apply's own plan is the only one an apply makes. When it differs from
// the job's (the cluster or the locks changed), the step fails with its
// *reconcile.StalePlanError, which holds the new plan, and records nothing
// (a pass plans again at once instead, in a new pass); when it fails before
// starting, with started given (a decision: the caller answers with the
// error), it records nothing either.
//
// The job's resumed, when not nil, is the in-flight record of an
// interrupted apply that the job's plan (what is left of it) continues:
// only what that plan holds is patched, but resumed stays the in-flight
// record and the apply is recorded, reported and counted as the plan that
// was approved (resumed's planHash, changes, start), so that the history
// holds one entry for it, whatever number of leaders it took.
func (w *worker) applyStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil || j.continued {
		return nil
	}
	s, prop := p.snap, j.prop
	log := w.log.WithValues("environment", w.env, "revision", short(s.Revision), "planHash", prop.Plan.PlanHash)
	begun := w.now().UTC()
	j.approver = approval.JoinApprovers(j.approvers)
	// applyHash is the plan pkg/reconcile applies: prop's, what is left.
	applyHash := prop.Plan.PlanHash
	var f *approval.InFlight // a new apply's in-flight record
	if j.resumed != nil {
		// The remainder is applied; the approved plan is what the
		// in-flight record already says, and it stays as it is.
		whole, err := approvedProposal(prop, j.resumed)
		if err != nil {
			p.done = true
			return failed(stepApply, reasonState, err)
		}
		log = log.WithValues("approvedPlanHash", j.resumed.PlanHash)
		prop, begun = whole, j.resumed.Started
		j.prop = prop
	} else {
		f = &approval.InFlight{Revision: s.Revision, PlanHash: prop.Plan.PlanHash, Approver: j.approver, Changes: changesJSON(prop.Plan.Changes), Started: begun}
		if len(j.approvers) > 1 {
			f.Approvers = j.approvers
		}
	}
	// The in-flight record (unless resumed) and the run's deployment task
	// begun, in one write, before the first patch: a leader that dies
	// during the apply leaves the next one what it was applying.
	if err := w.seq.Approved(ctx, delivery.Approval{Env: p.envM, Prop: j.prop, Approver: j.approver, InFlight: f}); err != nil {
		if f != nil {
			p.done = true
			return failed(stepApply, reasonState, fmt.Errorf("recording apply before starting it: %w", err))
		}
		// Resumed: the in-flight record is there already; the run is
		// written again at its next step.
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording the sequence state", "environment", w.env, "revision", short(s.Revision))
	}
	w.applying.Store(true)
	defer w.applying.Store(false)
	log.Info("applying", "approver", j.approver, "changes", len(prop.Plan.Changes))
	var under sync.Once
	j.reported = make(chan struct{})
	underWay := func() {
		under.Do(func() {
			if j.started != nil {
				j.started()
			}
			// Applying, shown once the first patch is out: the record hook
			// then reads and writes beside the apply, never in front of it.
			w.rec.moved()
			// The gate hears of it beside the apply, and before its outcome.
			go func() {
				defer close(j.reported)
				w.startedGate(context.WithoutCancel(ctx), prop, j.approver)
			}()
		})
	}
	res, err := w.applyWithGrace(ctx, w.request(s, p.envM), applyHash, reconcile.WithProgress(func(reconcile.Progress) {
		w.metrics.patched(w.env, s.Revision)
		underWay()
	}), reconcile.WithPromotion(w.promotion, j.approver))
	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) || (err != nil && res == nil && j.started != nil) {
		p.done = true
		return w.notApplied(ctx, p, err)
	}
	underWay()
	out := outcome(approval.Outcome{Approver: j.approver, Started: begun, Finished: w.now().UTC()}, res, err, ctx.Err() != nil)
	if len(j.approvers) > 1 {
		out.Approvers = j.approvers
	}
	j.res, j.out = res, out
	return nil
}

// notApplied ends the job of p whose apply did not start (err): its plan
// changed before it could be applied (a pass plans again at once, in a new
// pass; a decision proposes the new plan), or it failed before its first
// patch. A new apply's in-flight record is cleared; a resumed one stays: the
// next pass continues it when what is left is still part of it
// (resumable), or clears it.
func (w *worker) notApplied(ctx context.Context, p *pass, err error) error {
	var stale *reconcile.StalePlanError
	isStale := errors.As(err, &stale)
	if isStale {
		w.log.Info("plan changed before it could be applied", "environment", w.env, "revision", short(p.snap.Revision), "now", stale.Got)
	}
	if p.job.resumed == nil {
		// Recorded even when ctx has ended (a shutdown).
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		if cerr := w.store.Update(rctx, w.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, notApplying(st) }); cerr != nil {
			return failed(stepApply, reasonState, errors.Join(err, fmt.Errorf("clearing the apply that did not start: %w", cerr)))
		}
	}
	switch {
	case isStale && p.job.started == nil:
		// A pass: plan again at once, in a new pass.
		if ctx.Err() == nil {
			w.wakeUp()
		}
		return nil
	case isStale:
		return err // a decision proposes the new plan
	}
	return failed(stepApply, reasonPlan, err)
}

// verifyStep finishes the deployment task with the apply's result and,
// when it passed, runs the sequence's tasks after it (a run continued
// after its deployment runs what is left of them), up to the end or to
// the release approval.
func (w *worker) verifyStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil {
		return nil
	}
	if j.continued {
		var release int
		j.out, release = w.seq.Rest(ctx, j.prop, nil, j.out)
		j.waiting = w.awaitRelease(ctx, j.prop, release)
		if !j.waiting && j.out.Result == approval.ResultInterrupted {
			p.done = true // left in flight for the next leader
		}
		return nil
	}
	out, release := w.seq.Deployed(ctx, j.prop, j.res, j.out)
	j.out, j.waiting = out, w.awaitRelease(ctx, j.prop, release)
	<-j.reported
	return nil
}

// releaseStep ends the pass while the run waits for its release approval
// (awaitRelease wrote the wait): the apply stays in flight until the
// release approval decides (release.go), and the status shows it applied.
func (w *worker) releaseStep(_ context.Context, p *pass) error {
	j := p.job
	if j == nil || !j.waiting {
		return nil
	}
	if j.res != nil {
		p.observe(p.envM, appliedPlan(j.res), nil)
	}
	p.done = true
	return nil
}

// recordStep ends the job as its outcome says: rolled back when it failed
// and the environment says so (see revert.Cause), else recorded in the
// history and reported to the gate. The error says why the apply failed.
func (w *worker) recordStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil {
		return nil
	}
	s, prop, res, out := p.snap, j.prop, j.res, j.out
	log := w.log.WithValues("environment", w.env, "revision", short(prop.Revision), "planHash", prop.Plan.PlanHash)
	// Recorded and reported even when ctx has ended (a shutdown).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	rejected, _ := delivery.ReleaseRejected(w.seq.State(), prop.Revision)
	if cause, ok := revert.Cause(prop, out, res, rejected); w.rollback && ok {
		log.Info("apply failed; rolling it back", "message", out.Message)
		e := entryOf(prop, out, resolvedManifest(s, p.envM))
		e.Verification = delivery.Verifications(w.seq.State(), prop.Revision)
		if rerr := w.reverter.Start(ctx, e, cause); rerr != nil {
			return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s; %w", short(prop.Revision), out.Message, rerr))
		}
		return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s; rolled back", short(prop.Revision), out.Message))
	}
	applied := w.recordApply(rctx, prop, out, resolvedManifest(s, p.envM))
	w.completed(rctx, prop, out)
	log.Info("applied", "result", out.Result, "changes", applied, "duration", out.Finished.Sub(out.Started).String())
	switch out.Result {
	case approval.ResultFailed:
		return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s", short(prop.Revision), out.Message))
	case approval.ResultSucceeded:
		// Desired is live now: the status follows from the plan without
		// planning again.
		if res != nil {
			p.observe(p.envM, appliedPlan(res), nil)
		}
	}
	return nil
}

// approvedProposal is prop with the plan resumed was approved as: its
// planHash and changes (prop's plan holds what is left of them).
func approvedProposal(prop approval.Proposal, resumed *approval.InFlight) (approval.Proposal, error) {
	var changes []reconcile.Change
	if err := json.Unmarshal(resumed.Changes, &changes); err != nil {
		return prop, fmt.Errorf("decoding the changes of the interrupted apply %s: %w", resumed.PlanHash, err)
	}
	plan := *prop.Plan
	plan.PlanHash, plan.Changes = resumed.PlanHash, changes
	prop.Plan = &plan
	return prop, nil
}

// appliedPlan is res's plan once res succeeded: its changes are live.
func appliedPlan(res *reconcile.Result) *reconcile.Plan {
	p := *res.Plan
	p.Unchanged += len(p.Changes)
	p.Changes = nil
	p.PlanHash = reconcile.Hash(p.Environment, p.Revision, nil)
	return &p
}

// applyWithGrace applies planHash with opts (progress, the promotion of
// Rollouts); when ctx ends, the patches in flight get the apply grace to
// finish before the apply is cancelled (none when the Lease was lost: see
// graceful).
func (w *worker) applyWithGrace(ctx context.Context, req reconcile.Request, planHash string, opts ...reconcile.Option) (*reconcile.Result, error) {
	actx, cancel := graceful(ctx, w.applyGrace)
	defer cancel()
	return w.reconciler.Apply(actx, req, planHash, opts...)
}

// outcome is how an apply ended: out says who approved it, when it started
// and when it finished; res and err are pkg/reconcile's answer, interrupted
// whether a shutdown cut it short.
func outcome(out approval.Outcome, res *reconcile.Result, err error, interrupted bool) approval.Outcome {
	out.Apply, out.Result = res, approval.ResultSucceeded
	switch {
	case interrupted:
		out.Result, out.Message = approval.ResultInterrupted, "shut down during the apply; the next leader plans again and applies what is left"
	case err != nil:
		out.Result, out.Message = approval.ResultFailed, err.Error()
	case res.Failed():
		out.Result, out.Message = approval.ResultFailed, failureSummary(res)
	case res.Plan != nil && len(res.Plan.UnreachableTargets()) > 0:
		// What the services need in a target that did not answer is
		// unknown: the environment is not deployed, however well the
		// other targets went.
		out.Result, out.Message = approval.ResultFailed, unreachableSummary(res)
	}
	return out
}

// unreachableSummary says which targets an otherwise successful apply could
// not reach, and why.
func unreachableSummary(res *reconcile.Result) string {
	applied := 0
	for _, wr := range res.Workloads {
		if wr.Outcome != reconcile.OutcomeFailed && wr.Outcome != reconcile.OutcomeBlocked {
			applied++
		}
	}
	var why []string
	for _, t := range res.Plan.UnreachableTargets() {
		for _, pr := range res.Plan.Problems {
			if pr.Unreachable && pr.Target == t {
				why = append(why, pr.Message)
				break
			}
		}
	}
	return fmt.Sprintf("%d workload(s) deployed, but its services were not planned in %d target(s): %s", applied, len(why), joinMax(why, 5))
}

// recordApply writes out into the history (clearing the in-flight record
// unless the apply was interrupted: the next leader continues it) and the
// metrics, and returns the number of changes applied. m is the resolved
// manifest the entry keeps.
func (w *worker) recordApply(ctx context.Context, prop approval.Proposal, out approval.Outcome, m *approval.Manifest) int {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m, Verification: delivery.Verifications(w.seq.State(), prop.Revision), ReleasedBy: delivery.ReleasedBy(w.seq.State(), prop.Revision)}
	applied := 0
	if out.Apply != nil {
		var err error
		if e.Workloads, err = json.Marshal(out.Apply.Workloads); err != nil {
			w.log.Error(err, "encoding the workload results for the history", "environment", w.env)
		}
		for _, wr := range out.Apply.Workloads {
			if wr.Outcome.Applied() {
				applied += len(wr.Changes)
			}
		}
	}
	w.metrics.addApplied(w.env, applied)
	// Recorded, the in-flight record and the pending plan it settles
	// cleared, and the phase at rest, in one write; an interrupted apply
	// stays in flight (and in its phase) for the next leader.
	err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		st.Record(e, w.store.HistoryLimit())
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
		if out.Result != approval.ResultInterrupted {
			if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
				st.InFlight = nil
			}
			st.Phase = notApplying(st)
		}
	})
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording apply result", "environment", w.env, "planHash", e.PlanHash)
	}
	return applied
}

// startedGate tells the gate, when it is an approval.Starter, that prop's apply is under way; a failure is
// logged and counted.
func (w *worker) startedGate(ctx context.Context, prop approval.Proposal, approver string) {
	s, ok := w.gate.(approval.Starter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Started(ctx, prop, approver); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "reporting the start of the apply to the gate", "environment", w.env, "planHash", prop.Plan.PlanHash)
	}
}

// completed reports how prop ended to the gate; a failure is logged and counted, and the outcome kept in
// the state to report again (internal/outbox).
func (w *worker) completed(ctx context.Context, prop approval.Proposal, out approval.Outcome) {
	if err := w.gate.Completed(ctx, prop, out); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "reporting the outcome to the gate", "environment", w.env, "planHash", prop.Plan.PlanHash, "result", out.Result)
		w.owed.Owe(ctx, outbox.Completed(prop, out), err)
	}
}

// graceful is ctx, but cancelled only grace after ctx ends, so that patches
// in flight finish and the state is recorded; at once when ctx ended because
// this replica lost its Lease (lease.ErrLost): another replica may be
// applying already, and no patch may follow.
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			cancel()
			return
		}
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(gctx, func() { t.Stop() })
	})
	return gctx, func() { stop(); cancel() }
}
