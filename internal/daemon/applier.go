package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// applier carries out an apply a pass or a decision let through: the
// in-flight record, the patches under the lock re-checks and the rollouts
// (applyStep), the sequence's tasks after the deployment (verifyStep), the
// wait for a release approval (releaseStep), and the history, the gate's
// outcome or the rollback (recordStep). It holds what an apply needs: the
// term's store, the reconciler, the environment's sequence run, what the
// gate is told, and the rollback of a failed apply.
type applier struct {
	env     string
	log     logr.Logger
	now     func() time.Time
	metrics *meter.Metrics
	// store is the worker's store in its current term (each term fences it
	// anew: the worker's field, read at each call).
	store *phaseStore
	// reconciler applies in the environment's targets; request makes the
	// request of a snapshot's manifest there.
	reconciler reconciler
	request    func(gitsource.Snapshot, *manifest.Environment) reconcile.Request
	// promotion is what an apply does with an Argo Rollouts Rollout paused
	// at a step; applyGrace how long it may go on after shutdown begins.
	promotion  reconcile.Promotion
	applyGrace time.Duration
	seq        *delivery.Run
	tell       *herald.Herald
	release    *releaser
	// rec hears that the phase moved (Applying, once the first patch is out).
	rec *recorder
	// reverter rolls back a failed apply when rollback is set
	// (environments.<env>.onFailedRollout: rollback).
	reverter *revert.Reverter
	rollback bool
	// wake asks for a new pass (a plan changed before it could be applied).
	wake func()
	// applying is true while an apply is under way (read by other
	// goroutines: a replica gives back an environment that is not applying).
	applying atomic.Bool
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
func (a *applier) applyStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil || j.continued {
		return nil
	}
	s, prop := p.snap, j.prop
	log := a.log.WithValues("environment", a.env, "revision", approval.ShortRevision(s.Revision), "planHash", prop.Plan.PlanHash)
	begun := a.now().UTC()
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
	if err := a.seq.Approved(ctx, delivery.Approval{Env: p.envM, Prop: j.prop, Approver: j.approver, InFlight: f}); err != nil {
		if f != nil {
			p.done = true
			return failed(stepApply, reasonState, fmt.Errorf("recording apply before starting it: %w", err))
		}
		// Resumed: the in-flight record is there already; the run is
		// written again at its next step.
		a.metrics.Fail(a.env, reasonState)
		a.log.Error(err, "recording the sequence state", "environment", a.env, "revision", approval.ShortRevision(s.Revision))
	}
	a.applying.Store(true)
	defer a.applying.Store(false)
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
			a.rec.moved()
			// The gate hears of it beside the apply, and before its outcome.
			go func() {
				defer close(j.reported)
				a.tell.Started(context.WithoutCancel(ctx), prop, j.approver)
			}()
		})
	}
	res, err := a.applyWithGrace(ctx, a.request(s, p.envM), applyHash, reconcile.WithProgress(func(reconcile.Progress) {
		a.metrics.Patched(a.env, s.Revision)
		underWay()
	}), reconcile.WithPromotion(a.promotion, j.approver))
	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) || (err != nil && res == nil && j.started != nil) {
		p.done = true
		return a.notApplied(ctx, p, err)
	}
	underWay()
	out := outcome(approval.Outcome{Approver: j.approver, Started: begun, Finished: a.now().UTC()}, res, err, ctx.Err() != nil)
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
func (a *applier) notApplied(ctx context.Context, p *pass, err error) error {
	var stale *reconcile.StalePlanError
	isStale := errors.As(err, &stale)
	if isStale {
		a.log.Info("plan changed before it could be applied", "environment", a.env, "revision", approval.ShortRevision(p.snap.Revision), "now", stale.Got)
	}
	if p.job.resumed == nil {
		// Recorded even when ctx has ended (a shutdown).
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		if cerr := a.store.Update(rctx, a.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, notApplying(st) }); cerr != nil {
			return failed(stepApply, reasonState, errors.Join(err, fmt.Errorf("clearing the apply that did not start: %w", cerr)))
		}
	}
	switch {
	case isStale && p.job.started == nil:
		// A pass: plan again at once, in a new pass.
		if ctx.Err() == nil {
			a.wake()
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
func (a *applier) verifyStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil {
		return nil
	}
	if j.continued {
		var release int
		j.out, release = a.seq.Rest(ctx, j.prop, nil, j.out)
		j.waiting = a.release.await(ctx, j.prop, release)
		if !j.waiting && j.out.Result == approval.ResultInterrupted {
			p.done = true // left in flight for the next leader
		}
		return nil
	}
	out, release := a.seq.Deployed(ctx, j.prop, j.res, j.out)
	j.out, j.waiting = out, a.release.await(ctx, j.prop, release)
	<-j.reported
	return nil
}

// releaseStep ends the pass while the run waits for its release approval
// (awaitRelease wrote the wait): the apply stays in flight until the
// release approval decides (release.go), and the status shows it applied.
func (a *applier) releaseStep(_ context.Context, p *pass) error {
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
func (a *applier) recordStep(ctx context.Context, p *pass) error {
	j := p.job
	if j == nil {
		return nil
	}
	s, prop, res, out := p.snap, j.prop, j.res, j.out
	log := a.log.WithValues("environment", a.env, "revision", approval.ShortRevision(prop.Revision), "planHash", prop.Plan.PlanHash)
	// Recorded and reported even when ctx has ended (a shutdown).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	rejected, _ := delivery.ReleaseRejected(a.seq.State(), prop.Revision)
	if cause, ok := revert.Cause(prop, out, res, rejected); a.rollback && ok {
		log.Info("apply failed; rolling it back", "message", out.Message)
		e := entryOf(prop, out, resolvedManifest(s, p.envM))
		e.Verification = delivery.Verifications(a.seq.State(), prop.Revision)
		if rerr := a.reverter.Start(ctx, e, cause); rerr != nil {
			return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s; %w", approval.ShortRevision(prop.Revision), out.Message, rerr))
		}
		return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s; rolled back", approval.ShortRevision(prop.Revision), out.Message))
	}
	applied := a.recordApply(rctx, prop, out, resolvedManifest(s, p.envM))
	a.tell.Completed(rctx, prop, out)
	log.Info("applied", "result", out.Result, "changes", applied, "duration", out.Finished.Sub(out.Started).String())
	switch out.Result {
	case approval.ResultFailed:
		return failed(stepRecord, reasonApply, fmt.Errorf("applying revision %s: %s", approval.ShortRevision(prop.Revision), out.Message))
	case approval.ResultSucceeded:
		// Desired is live now: the status follows from the plan without
		// planning again.
		if res != nil {
			p.observe(p.envM, appliedPlan(res), nil)
		}
	}
	return nil
}

// applyWithGrace applies planHash with opts (progress, the promotion of
// Rollouts); when ctx ends, the patches in flight get the apply grace to
// finish before the apply is cancelled (none when the Lease was lost: see
// graceful).
func (a *applier) applyWithGrace(ctx context.Context, req reconcile.Request, planHash string, opts ...reconcile.Option) (*reconcile.Result, error) {
	actx, cancel := graceful(ctx, a.applyGrace)
	defer cancel()
	return a.reconciler.Apply(actx, req, planHash, opts...)
}

// recordApply writes out into the history (clearing the in-flight record
// unless the apply was interrupted: the next leader continues it) and the
// metrics, and returns the number of changes applied. m is the resolved
// manifest the entry keeps.
func (a *applier) recordApply(ctx context.Context, prop approval.Proposal, out approval.Outcome, m *approval.Manifest) int {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m, Verification: delivery.Verifications(a.seq.State(), prop.Revision), ReleasedBy: delivery.ReleasedBy(a.seq.State(), prop.Revision)}
	applied := 0
	if out.Apply != nil {
		var err error
		if e.Workloads, err = json.Marshal(out.Apply.Workloads); err != nil {
			a.log.Error(err, "encoding the workload results for the history", "environment", a.env)
		}
		for _, wr := range out.Apply.Workloads {
			if wr.Outcome.Applied() {
				applied += len(wr.Changes)
			}
		}
	}
	a.metrics.AddApplied(a.env, applied)
	// Recorded, the in-flight record and the pending plan it settles
	// cleared, and the phase at rest, in one write; an interrupted apply
	// stays in flight (and in its phase) for the next leader.
	err := a.store.Update(ctx, a.env, func(st *state.EnvState) {
		st.Record(e, a.store.HistoryLimit())
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
		a.metrics.Fail(a.env, reasonState)
		a.log.Error(err, "recording apply result", "environment", a.env, "planHash", e.PlanHash)
	}
	return applied
}

// recordLanded records an approved apply whose every patch landed before its
// process ended: killed (no entry), or stopped while it watched the rollouts
// (an interrupted entry, the in-flight record kept for the next leader, as a
// rolling upgrade leaves it). The plan is empty now, and without this the
// approval, its approvers and its changes would leave no history entry but
// the interruption, and no completed check run. Its rollouts were not
// watched to the end, and the entry says so.
func (a *applier) recordLanded(ctx context.Context, p *pass) {
	s, envM, st := p.snap, p.envM, p.st
	f := st.InFlight
	settled := func(e approval.Entry) bool { return e.PlanHash == f.PlanHash && e.Result != approval.ResultInterrupted }
	if f == nil || f.Revision != s.Revision || slices.ContainsFunc(st.History, settled) {
		return
	}
	var changes []reconcile.Change
	if err := json.Unmarshal(f.Changes, &changes); err != nil {
		a.log.Error(err, "decoding the changes of the apply in flight", "environment", a.env)
		return
	}
	plan := &reconcile.Plan{Environment: a.env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	prop := approval.Proposal{Environment: a.env, Revision: f.Revision, RevisionTime: s.Time, Plan: plan}
	out := approval.Outcome{Result: approval.ResultSucceeded, Approver: f.Approver, Approvers: f.Approvers, Started: f.Started,
		Finished: a.now().UTC(),
		Message:  "the apply was cut short after its last patch (the process ended); every approved change is in place, its rollouts were not watched to the end"}
	a.log.Info("recording an apply whose patches all landed before its process ended", "environment", a.env,
		"revision", approval.ShortRevision(f.Revision), "planHash", f.PlanHash)
	a.recordApply(ctx, prop, out, resolvedManifest(s, envM))
	a.tell.Completed(ctx, prop, out)
}
