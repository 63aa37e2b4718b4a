package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
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
	"go.opentelemetry.io/otel/trace"
)

// decider takes the decisions on the environment's pending plan in its
// worker: an approval or rejection sent by this replica's Daemon (decide),
// or handed over by another replica through the state (pickUp); a release
// approval is its Releaser's (internal/release) to carry out, and an approved plan is applied
// by the worker's steps from apply on, over a pass of its own.
type decider struct {
	env       string
	log       logr.Logger
	now       func() time.Time
	metrics   *meter.Metrics
	tracer    *tracing.Deploys
	store     *pass.Store
	source    pass.Source
	manifests pass.Manifests
	approvals *tally.Counter
	windows   *window.Guard
	seq       *delivery.Run
	tell      *herald.Herald
	release   *release.Releaser
	passes    pass.Runner
	// keeper says whether the last pass kept the pending plan at a newer
	// revision that changes nothing here (keepPending).
	keeper *gate.Keeper
	// glass is the break-glasses' record as the last glance saw it
	// (pickUp): a change, another replica keeping a break-glass, wakes the
	// worker.
	glass string
}

// decide handles an approval or rejection of the pending plan: it checks
// that the plan is pending and its revision still the newest (asking the
// remote), then rejects it, or applies it. An approval plans once: inside
// pkg/reconcile's Apply, which refuses when the plan changed since it was
// proposed (the cluster or the locks changed); the new plan is then proposed
// afresh and the decision refused. The approval is answered as soon as the
// apply is under way (see apply), so the caller learns whether it was taken.
func (d *decider) decide(ctx context.Context, dc pass.Decision) {
	ctx, span := d.tracer.Decision(trace.ContextWithSpanContext(ctx, dc.Caller), decisionName(dc), d.env, dc.PlanHash)
	defer span.End()
	var once sync.Once
	reply := func(p *approval.Pending, err error) {
		once.Do(func() { dc.Reply <- pass.Reply{Pending: p, Err: err} })
	}
	notPending := func() {
		st, err := d.store.Load(ctx, d.env)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(nil, &approval.NotPendingError{Environment: d.env, PlanHash: dc.PlanHash, Pending: st.Pending})
	}
	st, err := d.store.Load(ctx, d.env)
	if err != nil {
		reply(nil, err)
		return
	}
	p := st.Pending
	if p == nil || p.PlanHash != dc.PlanHash || d.release.StaleFor(p, dc.At) {
		// (A decision taken before the release approval began to wait was
		// for the plan before its deployment, queued while it was applied:
		// stale. One handed over then was dropped when the wait began.)
		reply(nil, &approval.NotPendingError{Environment: d.env, PlanHash: dc.PlanHash, Pending: p})
		return
	}
	// The revision must still be the newest: ask the remote now.
	s, ok := d.source.Latest()
	fresh, err := d.source.Poll(ctx)
	switch {
	case err != nil: // decide on the newest revision seen; the poll loop retries
		d.metrics.Fail(d.env, meter.ReasonFetch)
		d.log.Error(err, "asking the remote for the newest revision before deciding", "environment", d.env)
	case !ok || fresh.Revision != s.Revision:
		s, ok = fresh, true
	}
	if !ok || s.Revision != p.Revision {
		d.passes.PassAndLog(ctx) // supersedes the pending plan and proposes the newest
		// A release approval outlives a newer revision that changes
		// nothing here (release.Releaser.Hold), and so does a plan awaiting
		// approval (keepPending, which this pass found it kept at s): still
		// pending, it is decided, a plan at the revision reviewed.
		kept := ok && !p.Release && d.keeper.Keeps(s.Revision, p)
		if !ok || (!p.Release && !kept) || !d.stillPending(ctx, p) {
			notPending()
			return
		}
		if kept {
			ps, err := d.source.At(p.Revision)
			if err != nil {
				reply(nil, fmt.Errorf("reading revision %s of the pending plan: %w", approval.ShortRevision(p.Revision), err))
				return
			}
			s = ps
		}
	}
	d.tracer.Waited(ctx, d.env, p.PlanHash, d.now().Sub(p.ProposedAt))
	plan, err := pass.DecodePlan(d.env, p)
	if err != nil {
		d.metrics.Fail(d.env, meter.ReasonState)
		reply(nil, err)
		return
	}
	prop := approval.Proposal{Environment: d.env, Revision: p.Revision, RevisionTime: s.Time, Plan: plan}
	if st.Phase == status.PhaseAwaitingRelease {
		d.release.Decide(ctx, s, dc, pass.Decided{Prop: prop, Pending: p, Reply: reply})
		return
	}
	if !dc.Approve {
		out, err := d.recordRejection(ctx, s, prop, dc)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(p, nil)
		d.seq.Rejected(ctx, prop, dc.Who.ID.String(), dc.Reason)
		d.tell.Completed(ctx, prop, out)
		d.log.Info("plan rejected", "environment", d.env, "planHash", p.PlanHash, "by", dc.Who.String())
		return
	}
	// Counted first: a plan that needs more approvers stays pending, showing how many it has.
	p, err = d.approvals.Count(ctx, d.store.Store, tally.Vote{PlanHash: dc.PlanHash, Who: dc.Who})
	if err != nil {
		reply(nil, err)
		return
	}
	if !p.Complete() {
		reply(p, nil)
		d.tell.Tally(ctx, prop, p)
		d.log.Info("approval counted", "environment", d.env, "planHash", p.PlanHash, "by", dc.Who.String(), "approvals", p.Tally())
		return
	}
	v, glass := d.windows.JudgeFor(st, p.PlanHash, p.Revision)
	if !v.Open && glass == nil {
		// Approved outside the deploy windows: applied when they open.
		dp, err := d.windows.DeferApproved(ctx, prop, p, v)
		reply(dp, err)
		return
	}
	if glass != nil {
		// A break-glass lets it through the closed windows, once.
		if err := d.windows.Through(ctx, prop, *glass); err != nil {
			d.metrics.Fail(d.env, meter.ReasonState)
			reply(nil, err)
			return
		}
	}
	// The approved plan is applied by the steps from apply on, over a pass
	// of its own.
	dp := &pass.Pass{Snap: s}
	defer d.passes.EndPass(ctx, dp)
	// The pin is read afresh, not from st: a rollback may have pinned the
	// environment while the remote was asked.
	envM, err := d.manifests.Resolve(ctx, s, nil)
	if err != nil {
		d.metrics.Fail(d.env, meter.ReasonResolve)
		dp.Observe(nil, nil, err)
		reply(nil, fmt.Errorf("resolving manifest at %s: %w", approval.ShortRevision(s.Revision), err))
		return
	}
	dp.EnvM = envM
	dp.Job = &pass.Job{Prop: prop, Approvers: p.Approvers(), Started: func() {
		reply(p, nil)
		d.log.Info("plan approved", "environment", d.env, "planHash", p.PlanHash, "by", approval.JoinApprovers(p.Approvers()))
	}}
	err = d.passes.RunFrom(ctx, dp, pass.StepApply)
	var stale *reconcile.StalePlanError
	switch {
	case errors.As(err, &stale):
		// The cluster or the locks changed since the plan was proposed:
		// propose the plan Apply made instead (the steps from the gate
		// on), and refuse.
		st, lerr := d.store.Load(ctx, d.env)
		if lerr != nil {
			d.metrics.Fail(d.env, meter.ReasonState)
			reply(nil, lerr)
			return
		}
		gp := &pass.Pass{Snap: s, St: st, EnvM: envM, Plan: stale.Plan}
		gp.Observe(envM, stale.Plan, nil)
		if err := d.passes.RunFrom(ctx, gp, pass.StepGate); err != nil && ctx.Err() == nil {
			d.log.Error(err, "proposing the changed plan", "environment", d.env)
		}
		d.passes.EndPass(ctx, gp)
		notPending()
	case err != nil:
		reply(nil, err) // before the apply began; after, the reply is sent and the error recorded
		if ctx.Err() == nil {
			d.log.Error(err, "applying approved plan", "environment", d.env)
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
func (d *decider) approvalFailed(ctx context.Context, dec state.Handover, cause error) {
	st, err := d.store.Load(ctx, d.env)
	if err != nil {
		d.metrics.Fail(d.env, meter.ReasonState)
		d.log.Error(err, "reading the state to report a failed approval", "environment", d.env, "planHash", dec.PlanHash)
		return
	}
	if st.Pending == nil || st.Pending.PlanHash != dec.PlanHash {
		return
	}
	plan, err := pass.DecodePlan(d.env, st.Pending)
	if err != nil { // reported all the same, on the plan's revision and hash
		d.metrics.Fail(d.env, meter.ReasonState)
		d.log.Error(err, "reporting a failed approval", "environment", d.env)
	}
	now := d.now().UTC()
	prop := approval.Proposal{Environment: d.env, Revision: st.Pending.Revision, Plan: plan}
	out := approval.Outcome{Result: approval.ResultFailed, Approver: dec.Approver, Started: now, Finished: now,
		Message: "approving failed, nothing was applied: " + cause.Error()}
	d.tell.Completed(ctx, prop, out)
	d.tell.Forget()
	d.passes.WakeUp()
}

// stillPending reports whether p is the environment's pending plan still
// (same planHash and proposal); a state that cannot be read says no.
func (d *decider) stillPending(ctx context.Context, p *approval.Pending) bool {
	st, err := d.store.Load(ctx, d.env)
	if err != nil {
		d.metrics.Fail(d.env, meter.ReasonState)
		return false
	}
	q := st.Pending
	return q != nil && q.PlanHash == p.PlanHash && q.Release == p.Release && q.ProposedAt.Equal(p.ProposedAt)
}

// recordRejection records the rejection of the pending plan prop in the
// history, with the manifest of s it would have deployed (resolved again;
// kept without one when that fails), and returns its outcome.
func (d *decider) recordRejection(ctx context.Context, s gitsource.Snapshot, prop approval.Proposal, dc pass.Decision) (approval.Outcome, error) {
	now := d.now().UTC()
	out := approval.Outcome{Result: approval.ResultRejected, Approver: dc.Who.ID.String(), Message: dc.Reason, Started: now, Finished: now}
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: pass.ChangesJSON(prop.Plan.Changes), Approver: dc.Who.ID.String(),
		Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: now, Finished: now}
	if envM, err := d.manifests.Resolve(ctx, s, nil); err != nil {
		d.metrics.Fail(d.env, meter.ReasonResolve)
		d.log.Error(err, "resolving the rejected revision for the history; recording it without its manifest", "environment", d.env, "revision", approval.ShortRevision(s.Revision))
	} else {
		e.Manifest = pass.ResolvedManifest(s, envM)
	}
	if err := d.store.Update(ctx, d.env, func(st *state.EnvState) {
		st.Record(e, d.store.HistoryLimit())
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

// pickUp acts on the decisions other replicas handed over through the
// Store, one at a time (nextHandover's order), each taken from the queue
// before it is acted on. It stops after maxHandovers: those handed over
// meanwhile wait for the next look. It reports whether it took any: the
// records may have changed then, as after a decision of this replica's.
func (d *decider) pickUp(ctx context.Context) (took bool) {
	// Checked every second: decode the state only when a handover is there.
	g, err := d.store.Glance(ctx, d.env)
	if err != nil {
		d.metrics.Fail(d.env, meter.ReasonState)
		d.log.Error(err, "reading the state for decisions handed over", "environment", d.env)
		return took
	}
	if g.BreakGlass != d.glass {
		// A break-glass kept by any replica (window.Guard.BreakGlass): a pass judges the plan again.
		d.glass = g.BreakGlass
		d.passes.WakeUp()
	}
	if !g.Handover {
		return took
	}
	for range maxHandovers {
		if ctx.Err() != nil {
			return took
		}
		st, err := d.store.Load(ctx, d.env)
		if err != nil {
			d.metrics.Fail(d.env, meter.ReasonState)
			d.log.Error(err, "reading the state for decisions handed over", "environment", d.env)
			return took
		}
		dec, ok := nextHandover(st.Handovers)
		if !ok {
			return took
		}
		if err := d.store.Update(ctx, d.env, takeHandover(dec)); err != nil {
			d.metrics.Fail(d.env, meter.ReasonState)
			d.log.Error(err, "taking a decision handed over", "environment", d.env, "planHash", dec.PlanHash)
			return took
		}
		took = true
		d.actOn(ctx, dec)
	}
	return took
}

// actOn carries out dec, a decision taken from the queue.
func (d *decider) actOn(ctx context.Context, dec state.Handover) {
	dc := pass.Decision{Approve: dec.Approve, PlanHash: dec.PlanHash, Who: handoverPrincipal(dec), Reason: dec.Reason,
		Reply: make(chan pass.Reply, 1)}
	d.decide(ctx, dc)
	r := <-dc.Reply
	if r.Err == nil {
		return
	}
	d.log.Error(r.Err, "decision handed over by another replica", "environment", d.env, "planHash", dec.PlanHash,
		"approve", dec.Approve, "by", dec.Approver)
	if dec.Approve && !errors.Is(r.Err, approval.ErrNotPending) && !errors.Is(r.Err, approval.ErrRefused) {
		// The replica that took the approval has answered already: report on the gate (the check run).
		d.approvalFailed(ctx, dec, r.Err)
	}
}
