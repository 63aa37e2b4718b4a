package decision

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/gate"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/release"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/window"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Desk takes the decisions on an environment's pending plan in its worker:
// an approval or rejection sent by this replica's daemon (Decide), or handed
// over by another replica through the state (PickUp); a release approval is
// its Releaser's (internal/release) to carry out, and an approved plan is
// applied by the worker's steps from apply on, over a pass of its own.
type Desk struct {
	Config
	// glass is the break-glasses' record as the last glance saw it
	// (PickUp): a change, another replica keeping a break-glass, wakes the
	// worker.
	glass string
}

// Config is what a Desk is given by the worker.
type Config struct {
	pass.Room
	Tracer    *tracing.Deploys
	Source    pass.Source
	Manifests pass.Manifests
	Approvals *tally.Counter
	Windows   *window.Guard
	Seq       *delivery.Run
	Tell      *herald.Herald
	Release   *release.Releaser
	Passes    pass.Runner
	// Keeper says whether the last pass kept the pending plan at a newer
	// revision that changes nothing here.
	Keeper *gate.Keeper
}

// New makes the decision desk of c.Env.
func New(c Config) *Desk { return &Desk{Config: c} }

// Decide handles an approval or rejection of the pending plan: it checks
// that the plan is pending and its revision still the newest (asking the
// remote), then rejects it, or applies it. An approval plans once: inside
// pkg/reconcile's Apply, which refuses when the plan changed since it was
// proposed (the cluster or the locks changed); the new plan is then proposed
// afresh and the decision refused. The approval is answered as soon as the
// apply is under way (see deploy.Applier.ApplyStep), so the caller learns whether it was taken.
func (d *Desk) Decide(ctx context.Context, dc pass.Decision) {
	ctx, span := d.Tracer.Decision(trace.ContextWithSpanContext(ctx, dc.Caller), decisionName(dc), d.Env, dc.PlanHash)
	defer span.End()
	var once sync.Once
	reply := func(p *approval.Pending, err error) {
		once.Do(func() { dc.Reply <- pass.Reply{Pending: p, Err: err} })
	}
	notPending := func() {
		st, err := d.Store.Load(ctx, d.Env)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(nil, &approval.NotPendingError{Environment: d.Env, PlanHash: dc.PlanHash, Pending: st.Pending})
	}
	st, err := d.Store.Load(ctx, d.Env)
	if err != nil {
		reply(nil, err)
		return
	}
	p := st.Pending
	if p == nil || p.PlanHash != dc.PlanHash || d.Release.StaleFor(p, dc.At) {
		// (A decision taken before the release approval began to wait was
		// for the plan before its deployment, queued while it was applied:
		// stale. One handed over then was dropped when the wait began.)
		reply(nil, &approval.NotPendingError{Environment: d.Env, PlanHash: dc.PlanHash, Pending: p})
		return
	}
	// The revision must still be the newest: ask the remote now.
	s, ok := d.Source.Latest()
	fresh, err := d.Source.Poll(ctx)
	switch {
	case err != nil: // decide on the newest revision seen; the poll loop retries
		d.Metrics.Fail(d.Env, meter.ReasonFetch)
		d.Log.Error(err, "asking the remote for the newest revision before deciding", "environment", d.Env)
	case !ok || fresh.Revision != s.Revision:
		s, ok = fresh, true
	}
	if !ok || s.Revision != p.Revision {
		d.Passes.PassAndLog(ctx) // supersedes the pending plan and proposes the newest
		// A release approval outlives a newer revision that changes
		// nothing here (release.Releaser.Hold), and so does a plan awaiting
		// approval (gate.Keeper, which this pass found it kept at s): still
		// pending, it is decided, a plan at the revision reviewed.
		kept := ok && !p.Release && d.Keeper.Keeps(s.Revision, p)
		if !ok || (!p.Release && !kept) || !d.stillPending(ctx, p) {
			notPending()
			return
		}
		if kept {
			ps, err := d.Source.At(p.Revision)
			if err != nil {
				reply(nil, fmt.Errorf("reading revision %s of the pending plan: %w", approval.ShortRevision(p.Revision), err))
				return
			}
			s = ps
		}
	}
	d.Tracer.Waited(ctx, d.Env, p.PlanHash, d.Now().Sub(p.ProposedAt))
	plan, err := pass.DecodePlan(d.Env, p)
	if err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonState)
		reply(nil, err)
		return
	}
	prop := approval.Proposal{Environment: d.Env, Revision: p.Revision, RevisionTime: s.Time, Plan: plan}
	if st.Phase == status.PhaseAwaitingRelease {
		d.Release.Decide(ctx, s, dc, pass.Decided{Prop: prop, Pending: p, Reply: reply})
		return
	}
	if !dc.Approve {
		out, err := d.recordRejection(ctx, s, prop, dc)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(p, nil)
		d.Seq.Rejected(ctx, prop, dc.Who.ID.String(), dc.Reason)
		d.Tell.Completed(ctx, prop, out)
		d.Log.Info("plan rejected", "environment", d.Env, "planHash", p.PlanHash, "by", dc.Who.String())
		return
	}
	// Counted first: a plan that needs more approvers stays pending, showing how many it has.
	p, err = d.Approvals.Count(ctx, d.Store.Store, tally.Vote{PlanHash: dc.PlanHash, Who: dc.Who})
	if err != nil {
		reply(nil, err)
		return
	}
	if !p.Complete() {
		reply(p, nil)
		d.Tell.Tally(ctx, prop, p)
		d.Log.Info("approval counted", "environment", d.Env, "planHash", p.PlanHash, "by", dc.Who.String(), "approvals", p.Tally())
		return
	}
	v, glass := d.Windows.JudgeFor(st, p.PlanHash, p.Revision)
	if !v.Open && glass == nil {
		// Approved outside the deploy windows: applied when they open.
		dp, err := d.Windows.DeferApproved(ctx, prop, p, v)
		reply(dp, err)
		return
	}
	if glass != nil {
		// A break-glass lets it through the closed windows, once.
		if err := d.Windows.Through(ctx, prop, *glass); err != nil {
			d.Metrics.Fail(d.Env, meter.ReasonState)
			reply(nil, err)
			return
		}
	}
	// The approved plan is applied by the steps from apply on, over a pass
	// of its own.
	dp := &pass.Pass{Snap: s}
	defer d.Passes.EndPass(ctx, dp)
	// The pin is read afresh, not from st: a rollback may have pinned the
	// environment while the remote was asked.
	envM, err := d.Manifests.Resolve(ctx, s, nil)
	if err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonResolve)
		dp.Observe(nil, nil, err)
		reply(nil, fmt.Errorf("resolving manifest at %s: %w", approval.ShortRevision(s.Revision), err))
		return
	}
	dp.EnvM = envM
	dp.Job = &pass.Job{Prop: prop, Approvers: p.Approvers(), Started: func() {
		reply(p, nil)
		d.Log.Info("plan approved", "environment", d.Env, "planHash", p.PlanHash, "by", approval.JoinApprovers(p.Approvers()))
	}}
	err = d.Passes.RunFrom(ctx, dp, pass.StepApply)
	var stale *reconcile.StalePlanError
	switch {
	case errors.As(err, &stale):
		// The cluster or the locks changed since the plan was proposed:
		// propose the plan Apply made instead (the steps from the gate
		// on), and refuse.
		st, lerr := d.Store.Load(ctx, d.Env)
		if lerr != nil {
			d.Metrics.Fail(d.Env, meter.ReasonState)
			reply(nil, lerr)
			return
		}
		gp := &pass.Pass{Snap: s, St: st, EnvM: envM, Plan: stale.Plan}
		gp.Observe(envM, stale.Plan, nil)
		if err := d.Passes.RunFrom(ctx, gp, pass.StepGate); err != nil && ctx.Err() == nil {
			d.Log.Error(err, "proposing the changed plan", "environment", d.Env)
		}
		d.Passes.EndPass(ctx, gp)
		notPending()
	case err != nil:
		reply(nil, err) // before the apply began; after, the reply is sent and the error recorded
		if ctx.Err() == nil {
			d.Log.Error(err, "applying approved plan", "environment", d.Env)
		}
	default:
		reply(p, nil)
	}
}

// approvalFailed reports, as a failed outcome with nothing applied, an
// approval handed over by another replica that this leader could not carry
// out (resolving or planning failed, the state could not be read). The plan
// stays pending and is proposed again at the next pass, so it can be approved
// again. (A plan that is no longer pending is reported by Superseded instead.)
func (d *Desk) approvalFailed(ctx context.Context, dec state.Handover, cause error) {
	st, err := d.Store.Load(ctx, d.Env)
	if err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonState)
		d.Log.Error(err, "reading the state to report a failed approval", "environment", d.Env, "planHash", dec.PlanHash)
		return
	}
	if st.Pending == nil || st.Pending.PlanHash != dec.PlanHash {
		return
	}
	plan, err := pass.DecodePlan(d.Env, st.Pending)
	if err != nil { // reported all the same, on the plan's revision and hash
		d.Metrics.Fail(d.Env, meter.ReasonState)
		d.Log.Error(err, "reporting a failed approval", "environment", d.Env)
	}
	now := d.Now().UTC()
	prop := approval.Proposal{Environment: d.Env, Revision: st.Pending.Revision, Plan: plan}
	out := approval.Outcome{Result: approval.ResultFailed, Approver: dec.Approver, Started: now, Finished: now,
		Message: "approving failed, nothing was applied: " + cause.Error()}
	d.Tell.Completed(ctx, prop, out)
	d.Tell.Forget()
	d.Passes.WakeUp()
}

// stillPending reports whether p is the environment's pending plan still
// (same planHash and proposal); a state that cannot be read says no.
func (d *Desk) stillPending(ctx context.Context, p *approval.Pending) bool {
	st, err := d.Store.Load(ctx, d.Env)
	if err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonState)
		return false
	}
	q := st.Pending
	return q != nil && q.PlanHash == p.PlanHash && q.Release == p.Release && q.ProposedAt.Equal(p.ProposedAt)
}

// recordRejection records the rejection of the pending plan prop in the
// history, with the manifest of s it would have deployed (resolved again;
// kept without one when that fails), and returns its outcome.
func (d *Desk) recordRejection(ctx context.Context, s gitsource.Snapshot, prop approval.Proposal, dc pass.Decision) (approval.Outcome, error) {
	now := d.Now().UTC()
	out := approval.Outcome{Result: approval.ResultRejected, Approver: dc.Who.ID.String(), Message: dc.Reason, Started: now, Finished: now}
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: pass.ChangesJSON(prop.Plan.Changes), Approver: dc.Who.ID.String(),
		Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: now, Finished: now}
	if envM, err := d.Manifests.Resolve(ctx, s, nil); err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonResolve)
		d.Log.Error(err, "resolving the rejected revision for the history; recording it without its manifest", "environment", d.Env, "revision", approval.ShortRevision(s.Revision))
	} else {
		e.Manifest = pass.ResolvedManifest(s, envM)
	}
	if err := d.Store.Update(ctx, d.Env, func(st *state.EnvState) {
		st.Record(e, d.Store.HistoryLimit())
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
		if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash { // (a rejected plan never has one)
			st.InFlight = nil
		}
		st.Phase = pass.NotApplying(st)
	}); err != nil {
		return out, err
	}
	return out, nil
}

// PickUp acts on the decisions other replicas handed over through the
// Store, one at a time (nextHandover's order), each taken from the queue
// before it is acted on. It stops after MaxHandovers: those handed over
// meanwhile wait for the next look. It reports whether it took any: the
// records may have changed then, as after a decision of this replica's.
func (d *Desk) PickUp(ctx context.Context) (took bool) {
	// Checked every second: decode the state only when a handover is there.
	g, err := d.Store.Glance(ctx, d.Env)
	if err != nil {
		d.Metrics.Fail(d.Env, meter.ReasonState)
		d.Log.Error(err, "reading the state for decisions handed over", "environment", d.Env)
		return took
	}
	if g.BreakGlass != d.glass {
		// A break-glass kept by any replica (window.Guard.BreakGlass): a pass judges the plan again.
		d.glass = g.BreakGlass
		d.Passes.WakeUp()
	}
	if !g.Handover {
		return took
	}
	for range MaxHandovers {
		if ctx.Err() != nil {
			return took
		}
		st, err := d.Store.Load(ctx, d.Env)
		if err != nil {
			d.Metrics.Fail(d.Env, meter.ReasonState)
			d.Log.Error(err, "reading the state for decisions handed over", "environment", d.Env)
			return took
		}
		dec, ok := nextHandover(st.Handovers)
		if !ok {
			return took
		}
		if err := d.Store.Update(ctx, d.Env, takeHandover(dec)); err != nil {
			d.Metrics.Fail(d.Env, meter.ReasonState)
			d.Log.Error(err, "taking a decision handed over", "environment", d.Env, "planHash", dec.PlanHash)
			return took
		}
		took = true
		d.actOn(ctx, dec)
	}
	return took
}

// actOn carries out dec, a decision taken from the queue.
func (d *Desk) actOn(ctx context.Context, dec state.Handover) {
	dc := pass.Decision{Approve: dec.Approve, PlanHash: dec.PlanHash, Who: handoverPrincipal(dec), Reason: dec.Reason,
		Reply: make(chan pass.Reply, 1)}
	d.Decide(ctx, dc)
	r := <-dc.Reply
	if r.Err == nil {
		return
	}
	d.Log.Error(r.Err, "decision handed over by another replica", "environment", d.Env, "planHash", dec.PlanHash,
		"approve", dec.Approve, "by", dec.Approver)
	if dec.Approve && !errors.Is(r.Err, approval.ErrNotPending) && !errors.Is(r.Err, approval.ErrRefused) {
		// The replica that took the approval has answered already: report on the gate (the check run).
		d.approvalFailed(ctx, dec, r.Err)
	}
}

// decisionName names a decision's span.
func decisionName(dc pass.Decision) string {
	if dc.Approve {
		return "approve"
	}
	return "reject"
}
