package daemon

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// decision is an approval or rejection on its way to a worker.
type decision struct {
	approve  bool
	planHash string
	who      identity.Principal
	reason   string
	// at is when the decision was taken, on this process's monotonic
	// clock (zero: handed over by another replica): one taken before a
	// release approval began to wait here is not for it.
	at    time.Time
	reply chan decisionReply
	// caller is the span of the request that took it (the API call, the
	// check run's webhook): the decision's span is its child. Invalid when
	// handed over by another replica.
	caller trace.SpanContext
}

type decisionReply struct {
	pending *approval.Pending
	err     error
}

// approvalFailed reports, as a failed outcome with nothing applied, an
// approval handed over by another replica that this leader could not carry
// out (resolving or planning failed, the state could not be read). The plan
// stays pending and is proposed again at the next pass, so it can be approved
// again. (A plan that is no longer pending is reported by Superseded instead.)
func (w *worker) approvalFailed(ctx context.Context, dec state.Handover, cause error) {
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "reading the state to report a failed approval", "environment", w.env, "planHash", dec.PlanHash)
		return
	}
	if st.Pending == nil || st.Pending.PlanHash != dec.PlanHash {
		return
	}
	plan, err := decodePlan(w.env, st.Pending)
	if err != nil { // reported all the same, on the plan's revision and hash
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "reporting a failed approval", "environment", w.env)
	}
	now := w.now().UTC()
	prop := approval.Proposal{Environment: w.env, Revision: st.Pending.Revision, Plan: plan}
	out := approval.Outcome{Result: approval.ResultFailed, Approver: dec.Approver, Started: now, Finished: now,
		Message: "approving failed, nothing was applied: " + cause.Error()}
	w.completed(ctx, prop, out)
	w.proposed = ""
	w.wakeUp()
}

// decide handles an approval or rejection of the pending plan: it checks
// that the plan is pending and its revision still the newest (asking the
// remote), then rejects it, or applies it. An approval plans once: inside
// pkg/reconcile's Apply, which refuses when the plan changed since it was
// proposed (the cluster or the locks changed); the new plan is then proposed
// afresh and the decision refused. The approval is answered as soon as the
// apply is under way (see apply), so the caller learns whether it was taken.
func (w *worker) decide(ctx context.Context, dc decision) {
	ctx, span := w.tracer.Decision(trace.ContextWithSpanContext(ctx, dc.caller), decisionName(dc), w.env, dc.planHash)
	defer span.End()
	var once sync.Once
	reply := func(p *approval.Pending, err error) {
		once.Do(func() { dc.reply <- decisionReply{pending: p, err: err} })
	}
	notPending := func() {
		st, err := w.store.Load(ctx, w.env)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(nil, &approval.NotPendingError{Environment: w.env, PlanHash: dc.planHash, Pending: st.Pending})
	}
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		reply(nil, err)
		return
	}
	p := st.Pending
	if p == nil || p.PlanHash != dc.planHash || (p.Release && w.releaseHash == p.PlanHash && !dc.at.IsZero() && dc.at.Before(w.releaseSince)) {
		// (A decision taken before the release approval began to wait was
		// for the plan before its deployment, queued while it was applied:
		// stale. One handed over then was dropped when the wait began.)
		reply(nil, &approval.NotPendingError{Environment: w.env, PlanHash: dc.planHash, Pending: p})
		return
	}
	// The revision must still be the newest: ask the remote now.
	s, ok := w.source.Latest()
	fresh, err := w.source.Poll(ctx)
	switch {
	case err != nil: // decide on the newest revision seen; the poll loop retries
		w.metrics.fail(w.env, reasonFetch)
		w.log.Error(err, "asking the remote for the newest revision before deciding", "environment", w.env)
	case !ok || fresh.Revision != s.Revision:
		s, ok = fresh, true
	}
	if !ok || s.Revision != p.Revision {
		w.passAndLog(ctx) // supersedes the pending plan and proposes the newest
		// A release approval outlives a newer revision that changes
		// nothing here (holdRelease), and so does a plan awaiting
		// approval (keepPending, which this pass found it kept at s): still
		// pending, it is decided, a plan at the revision reviewed.
		kept := ok && !p.Release && w.kept == keptKey(s.Revision, p)
		if !ok || (!p.Release && !kept) || !w.stillPending(ctx, p) {
			notPending()
			return
		}
		if kept {
			ps, err := w.source.At(p.Revision)
			if err != nil {
				reply(nil, fmt.Errorf("reading revision %s of the pending plan: %w", short(p.Revision), err))
				return
			}
			s = ps
		}
	}
	w.tracer.Waited(ctx, w.env, p.PlanHash, p.ProposedAt)
	plan, err := decodePlan(w.env, p)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		reply(nil, err)
		return
	}
	prop := approval.Proposal{Environment: w.env, Revision: p.Revision, RevisionTime: s.Time, Plan: plan}
	if st.Phase == status.PhaseAwaitingRelease {
		w.decideRelease(ctx, s, dc, decided{prop: prop, pending: p, reply: reply})
		return
	}
	if !dc.approve {
		out, err := w.recordRejection(ctx, s, prop, dc)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(p, nil)
		w.seq.Rejected(ctx, prop, dc.who.ID.String(), dc.reason)
		w.completed(ctx, prop, out)
		w.log.Info("plan rejected", "environment", w.env, "planHash", p.PlanHash, "by", dc.who.String())
		return
	}
	// Counted first: a plan that needs more approvers stays pending, showing how many it has.
	p, err = w.approvals.Count(ctx, w.store.Store, tally.Vote{PlanHash: dc.planHash, Who: dc.who})
	if err != nil {
		reply(nil, err)
		return
	}
	if !p.Complete() {
		reply(p, nil)
		w.tally(ctx, prop, p)
		w.log.Info("approval counted", "environment", w.env, "planHash", p.PlanHash, "by", dc.who.String(), "approvals", p.Tally())
		return
	}
	v, glass := w.windows.JudgeFor(st, p.PlanHash, p.Revision)
	if !v.Open && glass == nil {
		// Approved outside the deploy windows: applied when they open.
		dp, err := w.windows.DeferApproved(ctx, prop, p, v)
		reply(dp, err)
		return
	}
	if glass != nil {
		// A break-glass lets it through the closed windows, once.
		if err := w.windows.Through(ctx, prop, *glass); err != nil {
			w.metrics.fail(w.env, reasonState)
			reply(nil, err)
			return
		}
	}
	// The approved plan is applied by the steps from apply on, over a pass
	// of its own.
	dp := &pass{snap: s}
	defer w.endPass(ctx, dp)
	// The pin is read afresh, not from st: a rollback may have pinned the
	// environment while the remote was asked.
	envM, err := w.manifests.Resolve(ctx, s, nil)
	if err != nil {
		w.metrics.fail(w.env, reasonResolve)
		dp.observe(nil, nil, err)
		reply(nil, fmt.Errorf("resolving manifest at %s: %w", short(s.Revision), err))
		return
	}
	dp.envM = envM
	dp.job = &applyJob{prop: prop, approvers: p.Approvers(), started: func() {
		reply(p, nil)
		w.log.Info("plan approved", "environment", w.env, "planHash", p.PlanHash, "by", approval.JoinApprovers(p.Approvers()))
	}}
	err = w.runSteps(ctx, dp, w.applySteps())
	var stale *reconcile.StalePlanError
	switch {
	case errors.As(err, &stale):
		// The cluster or the locks changed since the plan was proposed:
		// propose the plan Apply made instead (the steps from the gate
		// on), and refuse.
		st, lerr := w.store.Load(ctx, w.env)
		if lerr != nil {
			w.metrics.fail(w.env, reasonState)
			reply(nil, lerr)
			return
		}
		gp := &pass{snap: s, st: st, envM: envM, plan: stale.Plan}
		gp.observe(envM, stale.Plan, nil)
		if err := w.runSteps(ctx, gp, w.stepsFrom(stepGate)); err != nil && ctx.Err() == nil {
			w.log.Error(err, "proposing the changed plan", "environment", w.env)
		}
		w.endPass(ctx, gp)
		notPending()
	case err != nil:
		reply(nil, err) // before the apply began; after, the reply is sent and the error recorded
		if ctx.Err() == nil {
			w.log.Error(err, "applying approved plan", "environment", w.env)
		}
	default:
		reply(p, nil)
	}
}

// stillPending reports whether p is the environment's pending plan still
// (same planHash and proposal); a state that cannot be read says no.
func (w *worker) stillPending(ctx context.Context, p *approval.Pending) bool {
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		return false
	}
	q := st.Pending
	return q != nil && q.PlanHash == p.PlanHash && q.Release == p.Release && q.ProposedAt.Equal(p.ProposedAt)
}

// tally shows the gate the approvals of p so far, when it is an approval.Tallier; a failure is logged and
// counted.
func (w *worker) tally(ctx context.Context, prop approval.Proposal, p *approval.Pending) {
	t, ok := w.gate.(approval.Tallier)
	if !ok {
		return
	}
	if err := t.Tally(ctx, prop, p.Approvers(), p.Needed()); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "showing the approvals so far on the gate", "environment", w.env, "planHash", p.PlanHash)
	}
}

// recordRejection records the rejection of the pending plan prop in the
// history, with the manifest of s it would have deployed (resolved again;
// kept without one when that fails), and returns its outcome.
func (w *worker) recordRejection(ctx context.Context, s gitsource.Snapshot, prop approval.Proposal, dc decision) (approval.Outcome, error) {
	now := w.now().UTC()
	out := approval.Outcome{Result: approval.ResultRejected, Approver: dc.who.ID.String(), Message: dc.reason, Started: now, Finished: now}
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: dc.who.ID.String(),
		Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: now, Finished: now}
	if envM, err := w.manifests.Resolve(ctx, s, nil); err != nil {
		w.metrics.fail(w.env, reasonResolve)
		w.log.Error(err, "resolving the rejected revision for the history; recording it without its manifest", "environment", w.env, "revision", short(s.Revision))
	} else {
		e.Manifest = resolvedManifest(s, envM)
	}
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		st.Record(e, w.store.HistoryLimit())
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
		if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash { // (a rejected plan never has one)
			st.InFlight = nil
		}
		st.Phase = notApplying(st)
	}); err != nil {
		return out, err
	}
	return out, nil
}
