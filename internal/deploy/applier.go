package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/release"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Applier carries out an apply a pass or a decision let through: the
// in-flight record, the patches under the lock re-checks and the rollouts
// (ApplyStep), the sequence's tasks after the deployment (VerifyStep), the
// wait for a release approval (ReleaseStep), and the history, the gate's
// outcome or the rollback (RecordStep). It holds what an apply needs: the
// term's store, the reconciler, the environment's sequence run, what the
// gate is told, and the rollback of a failed apply.
type Applier struct {
	Config
	// applying is true while an apply is under way (read by other
	// goroutines: a replica gives back an environment that is not applying).
	applying atomic.Bool
}

// Config is what an Applier is given by the worker.
type Config struct {
	pass.Room
	// Reconciler applies in the environment's targets; Request makes the
	// request of a snapshot's manifest there.
	Reconciler pass.Reconciler
	Request    func(gitsource.Snapshot, *manifest.Environment) reconcile.Request
	// Promotion is what an apply does with an Argo Rollouts Rollout paused
	// at a step; Grace is ctx for the apply, cancelled only the apply
	// grace after ctx ends (at once when the Lease was lost).
	Promotion reconcile.Promotion
	Grace     func(context.Context) (context.Context, context.CancelFunc)
	Seq       *delivery.Run
	Tell      *herald.Herald
	Release   *release.Releaser
	// Moved hears that the phase moved (Applying, once the first patch is out).
	Moved func()
	// Reverter rolls back a failed apply when Rollback is set
	// (environments.<env>.onFailedRollout: rollback).
	Reverter *revert.Reverter
	Rollback bool
	// Wake asks for a new pass (a plan changed before it could be applied).
	Wake func()
}

// New makes the applier of c.Env.
func New(c Config) *Applier { return &Applier{Config: c} }

// Applying reports whether an apply is under way.
func (a *Applier) Applying() bool { return a.applying.Load() }

// ApplyStep applies the job's plan, recording it as in flight first (the
// history follows in RecordStep). A shutdown lets the patches in flight
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
func (a *Applier) ApplyStep(ctx context.Context, p *pass.Pass) error {
	j := p.Job
	if j == nil || j.Continued {
		return nil
	}
	s, prop := p.Snap, j.Prop
	log := a.Log.WithValues("environment", a.Env, "revision", approval.ShortRevision(s.Revision), "planHash", prop.Plan.PlanHash)
	begun := a.Now().UTC()
	j.Approver = approval.JoinApprovers(j.Approvers)
	// applyHash is the plan pkg/reconcile applies: prop's, what is left.
	applyHash := prop.Plan.PlanHash
	var f *approval.InFlight // a new apply's in-flight record
	if j.Resumed != nil {
		// The remainder is applied; the approved plan is what the
		// in-flight record already says, and it stays as it is.
		whole, err := approvedProposal(prop, j.Resumed)
		if err != nil {
			p.Done = true
			return pass.Failed(pass.StepApply, meter.ReasonState, err)
		}
		log = log.WithValues("approvedPlanHash", j.Resumed.PlanHash)
		prop, begun = whole, j.Resumed.Started
		j.Prop = prop
	} else {
		f = &approval.InFlight{Revision: s.Revision, PlanHash: prop.Plan.PlanHash, Approver: j.Approver, Changes: pass.ChangesJSON(prop.Plan.Changes), Started: begun}
		if len(j.Approvers) > 1 {
			f.Approvers = j.Approvers
		}
	}
	// The in-flight record (unless resumed) and the run's deployment task
	// begun, in one write, before the first patch: a leader that dies
	// during the apply leaves the next one what it was applying.
	if err := a.Seq.Approved(ctx, delivery.Approval{Env: p.EnvM, Prop: j.Prop, Approver: j.Approver, InFlight: f}); err != nil {
		if f != nil {
			p.Done = true
			return pass.Failed(pass.StepApply, meter.ReasonState, fmt.Errorf("recording apply before starting it: %w", err))
		}
		// Resumed: the in-flight record is there already; the run is
		// written again at its next step.
		a.Metrics.Fail(a.Env, meter.ReasonState)
		a.Log.Error(err, "recording the sequence state", "environment", a.Env, "revision", approval.ShortRevision(s.Revision))
	}
	a.applying.Store(true)
	defer a.applying.Store(false)
	log.Info("applying", "approver", j.Approver, "changes", len(prop.Plan.Changes))
	var under sync.Once
	j.Reported = make(chan struct{})
	underWay := func() {
		under.Do(func() {
			if j.Started != nil {
				j.Started()
			}
			// Applying, shown once the first patch is out: the record hook
			// then reads and writes beside the apply, never in front of it.
			a.Moved()
			// The gate hears of it beside the apply, and before its outcome.
			go func() {
				defer close(j.Reported)
				a.Tell.Started(context.WithoutCancel(ctx), prop, j.Approver)
			}()
		})
	}
	res, err := a.applyWithGrace(ctx, a.Request(s, p.EnvM), applyHash, reconcile.WithProgress(func(reconcile.Progress) {
		a.Metrics.Patched(a.Env, s.Revision)
		underWay()
	}), reconcile.WithPromotion(a.Promotion, j.Approver))
	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) || (err != nil && res == nil && j.Started != nil) {
		p.Done = true
		return a.notApplied(ctx, p, err)
	}
	underWay()
	out := outcome(approval.Outcome{Approver: j.Approver, Started: begun, Finished: a.Now().UTC()}, res, err, ctx.Err() != nil)
	if len(j.Approvers) > 1 {
		out.Approvers = j.Approvers
	}
	j.Res, j.Out = res, out
	return nil
}

// notApplied ends the job of p whose apply did not start (err): its plan
// changed before it could be applied (a pass plans again at once, in a new
// pass; a decision proposes the new plan), or it failed before its first
// patch. A new apply's in-flight record is cleared; a resumed one stays: the
// next pass continues it when what is left is still part of it
// (resumable), or clears it.
func (a *Applier) notApplied(ctx context.Context, p *pass.Pass, err error) error {
	var stale *reconcile.StalePlanError
	isStale := errors.As(err, &stale)
	if isStale {
		a.Log.Info("plan changed before it could be applied", "environment", a.Env, "revision", approval.ShortRevision(p.Snap.Revision), "now", stale.Got)
	}
	if p.Job.Resumed == nil {
		// Recorded even when ctx has ended (a shutdown).
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		if cerr := a.Store.Update(rctx, a.Env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, pass.NotApplying(st) }); cerr != nil {
			return pass.Failed(pass.StepApply, meter.ReasonState, errors.Join(err, fmt.Errorf("clearing the apply that did not start: %w", cerr)))
		}
	}
	switch {
	case isStale && p.Job.Started == nil:
		// A pass: plan again at once, in a new pass.
		if ctx.Err() == nil {
			a.Wake()
		}
		return nil
	case isStale:
		return err // a decision proposes the new plan
	}
	return pass.Failed(pass.StepApply, meter.ReasonPlan, err)
}

// VerifyStep finishes the deployment task with the apply's result and,
// when it passed, runs the sequence's tasks after it (a run continued
// after its deployment runs what is left of them), up to the end or to
// the release approval.
func (a *Applier) VerifyStep(ctx context.Context, p *pass.Pass) error {
	j := p.Job
	if j == nil {
		return nil
	}
	if j.Continued {
		var ri int
		j.Out, ri = a.Seq.Rest(ctx, j.Prop, nil, j.Out)
		j.Waiting = a.Release.Await(ctx, j.Prop, ri)
		if !j.Waiting && j.Out.Result == approval.ResultInterrupted {
			p.Done = true // left in flight for the next leader
		}
		return nil
	}
	out, ri := a.Seq.Deployed(ctx, j.Prop, j.Res, j.Out)
	j.Out, j.Waiting = out, a.Release.Await(ctx, j.Prop, ri)
	<-j.Reported
	return nil
}

// ReleaseStep ends the pass while the run waits for its release approval
// (release.Releaser.Await wrote the wait): the apply stays in flight until the
// release approval decides (internal/release), and the status shows it applied.
func (a *Applier) ReleaseStep(_ context.Context, p *pass.Pass) error {
	j := p.Job
	if j == nil || !j.Waiting {
		return nil
	}
	if j.Res != nil {
		p.Observe(p.EnvM, appliedPlan(j.Res), nil)
	}
	p.Done = true
	return nil
}

// RecordStep ends the job as its outcome says: rolled back when it failed
// and the environment says so (see revert.Cause), else recorded in the
// history and reported to the gate. The error says why the apply failed.
func (a *Applier) RecordStep(ctx context.Context, p *pass.Pass) error {
	j := p.Job
	if j == nil {
		return nil
	}
	s, prop, res, out := p.Snap, j.Prop, j.Res, j.Out
	log := a.Log.WithValues("environment", a.Env, "revision", approval.ShortRevision(prop.Revision), "planHash", prop.Plan.PlanHash)
	// Recorded and reported even when ctx has ended (a shutdown).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	rejected, _ := delivery.ReleaseRejected(a.Seq.State(), prop.Revision)
	if cause, ok := revert.Cause(prop, out, res, rejected); a.Rollback && ok {
		log.Info("apply failed; rolling it back", "message", out.Message)
		e := entryOf(prop, out, pass.ResolvedManifest(s, p.EnvM))
		e.Verification = delivery.Verifications(a.Seq.State(), prop.Revision)
		if rerr := a.Reverter.Start(ctx, e, cause); rerr != nil {
			return pass.Failed(pass.StepRecord, meter.ReasonApply, fmt.Errorf("applying revision %s: %s; %w", approval.ShortRevision(prop.Revision), out.Message, rerr))
		}
		return pass.Failed(pass.StepRecord, meter.ReasonApply, fmt.Errorf("applying revision %s: %s; rolled back", approval.ShortRevision(prop.Revision), out.Message))
	}
	applied := a.recordApply(rctx, prop, out, pass.ResolvedManifest(s, p.EnvM))
	a.Tell.Completed(rctx, prop, out)
	log.Info("applied", "result", out.Result, "changes", applied, "duration", out.Finished.Sub(out.Started).String())
	switch out.Result {
	case approval.ResultFailed:
		return pass.Failed(pass.StepRecord, meter.ReasonApply, fmt.Errorf("applying revision %s: %s", approval.ShortRevision(prop.Revision), out.Message))
	case approval.ResultSucceeded:
		// Desired is live now: the status follows from the plan without
		// planning again.
		if res != nil {
			p.Observe(p.EnvM, appliedPlan(res), nil)
		}
	}
	return nil
}

// applyWithGrace applies planHash with opts (progress, the promotion of
// Rollouts); when ctx ends, the patches in flight get the apply grace to
// finish before the apply is cancelled (none when the Lease was lost: see
// graceful).
func (a *Applier) applyWithGrace(ctx context.Context, req reconcile.Request, planHash string, opts ...reconcile.Option) (*reconcile.Result, error) {
	actx, cancel := a.Grace(ctx)
	defer cancel()
	return a.Reconciler.Apply(actx, req, planHash, opts...)
}

// recordApply writes out into the history (clearing the in-flight record
// unless the apply was interrupted: the next leader continues it) and the
// metrics, and returns the number of changes applied. m is the resolved
// manifest the entry keeps.
func (a *Applier) recordApply(ctx context.Context, prop approval.Proposal, out approval.Outcome, m *approval.Manifest) int {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: pass.ChangesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m, Verification: delivery.Verifications(a.Seq.State(), prop.Revision), ReleasedBy: delivery.ReleasedBy(a.Seq.State(), prop.Revision)}
	applied := 0
	if out.Apply != nil {
		var err error
		if e.Workloads, err = json.Marshal(out.Apply.Workloads); err != nil {
			a.Log.Error(err, "encoding the workload results for the history", "environment", a.Env)
		}
		for _, wr := range out.Apply.Workloads {
			if wr.Outcome.Applied() {
				applied += len(wr.Changes)
			}
		}
	}
	a.Metrics.AddApplied(a.Env, applied)
	// Recorded, the in-flight record and the pending plan it settles
	// cleared, and the phase at rest, in one write; an interrupted apply
	// stays in flight (and in its phase) for the next leader.
	err := a.Store.Update(ctx, a.Env, func(st *state.EnvState) {
		st.Record(e, a.Store.HistoryLimit())
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
		if out.Result != approval.ResultInterrupted {
			if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
				st.InFlight = nil
			}
			st.Phase = pass.NotApplying(st)
		}
	})
	if err != nil {
		a.Metrics.Fail(a.Env, meter.ReasonState)
		a.Log.Error(err, "recording apply result", "environment", a.Env, "planHash", e.PlanHash)
	}
	return applied
}

// RecordLanded records an approved apply whose every patch landed before its
// process ended: killed (no entry), or stopped while it watched the rollouts
// (an interrupted entry, the in-flight record kept for the next leader, as a
// rolling upgrade leaves it). The plan is empty now, and without this the
// approval, its approvers and its changes would leave no history entry but
// the interruption, and no completed check run. Its rollouts were not
// watched to the end, and the entry says so.
func (a *Applier) RecordLanded(ctx context.Context, p *pass.Pass) {
	s, envM, st := p.Snap, p.EnvM, p.St
	f := st.InFlight
	settled := func(e approval.Entry) bool { return e.PlanHash == f.PlanHash && e.Result != approval.ResultInterrupted }
	if f == nil || f.Revision != s.Revision || slices.ContainsFunc(st.History, settled) {
		return
	}
	var changes []reconcile.Change
	if err := json.Unmarshal(f.Changes, &changes); err != nil {
		a.Log.Error(err, "decoding the changes of the apply in flight", "environment", a.Env)
		return
	}
	plan := &reconcile.Plan{Environment: a.Env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	prop := approval.Proposal{Environment: a.Env, Revision: f.Revision, RevisionTime: s.Time, Plan: plan}
	out := approval.Outcome{Result: approval.ResultSucceeded, Approver: f.Approver, Approvers: f.Approvers, Started: f.Started,
		Finished: a.Now().UTC(),
		Message:  "the apply was cut short after its last patch (the process ended); every approved change is in place, its rollouts were not watched to the end"}
	a.Log.Info("recording an apply whose patches all landed before its process ended", "environment", a.Env,
		"revision", approval.ShortRevision(f.Revision), "planHash", f.PlanHash)
	a.recordApply(ctx, prop, out, pass.ResolvedManifest(s, envM))
	a.Tell.Completed(ctx, prop, out)
}
