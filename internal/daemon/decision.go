package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// decision is an approval or rejection on its way to a worker.
type decision struct {
	approve  bool
	planHash string
	who      string
	reason   string
	reply    chan decisionReply
}

type decisionReply struct {
	pending *approval.Pending
	err     error
}

// pickUp acts on a decision another replica handed over through the Store.
func (w *worker) pickUp(ctx context.Context) {
	st, err := w.d.store.Load(ctx, w.env)
	if err != nil || st.Handover == nil {
		return
	}
	dec := *st.Handover
	if err := w.d.store.Update(ctx, w.env, func(st *EnvState) { st.Handover = nil }); err != nil {
		w.d.metrics.fail(w.env, "state")
		return
	}
	dc := decision{approve: dec.Approve, planHash: dec.PlanHash, who: dec.Approver, reason: dec.Reason,
		reply: make(chan decisionReply, 1)}
	w.decide(ctx, dc)
	r := <-dc.reply
	if r.err == nil {
		return
	}
	w.d.log.Error(r.err, "decision handed over by another replica", "environment", w.env, "planHash", dec.PlanHash)
	var np *approval.NotPendingError
	if dec.Approve && !errors.As(r.err, &np) {
		// The replica that took the approval has answered already: report on the gate (the check run).
		w.approvalFailed(ctx, dec, r.err)
	}
}

// approvalFailed reports, as a failed outcome with nothing applied, an
// approval handed over by another replica that this leader could not carry
// out (re-planning failed, the state could not be read). The plan stays
// pending and is proposed again at the next pass, so it can be approved again.
// (A plan that is no longer pending is reported by Superseded instead.)
func (w *worker) approvalFailed(ctx context.Context, dec Handover, cause error) {
	st, err := w.d.store.Load(ctx, w.env)
	if err != nil || st.Pending == nil || st.Pending.PlanHash != dec.PlanHash {
		return
	}
	var plan reconcile.Plan
	if err := json.Unmarshal(st.Pending.Plan, &plan); err != nil {
		return
	}
	now := time.Now().UTC()
	prop := approval.Proposal{Environment: w.env, Revision: st.Pending.Revision, Plan: &plan}
	out := approval.Outcome{Result: approval.ResultFailed, Approver: dec.Approver, Started: now, Finished: now,
		Message: "approving failed, nothing was applied: " + cause.Error()}
	w.completed(ctx, prop, out)
	w.proposed = ""
	w.wakeUp()
}

// decide handles an approval or rejection of the pending plan: it checks
// that the plan is pending and its revision still the newest (asking the
// remote), then rejects it, or re-plans and, when the hash is unchanged,
// replies and applies it. A changed plan is proposed afresh and the decision
// refused.
func (w *worker) decide(ctx context.Context, dc decision) {
	reply := func(p *approval.Pending, err error) { dc.reply <- decisionReply{pending: p, err: err} }
	notPending := func() {
		st, err := w.d.store.Load(ctx, w.env)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(nil, &approval.NotPendingError{Environment: w.env, PlanHash: dc.planHash, Pending: st.Pending})
	}
	st, err := w.d.store.Load(ctx, w.env)
	if err != nil {
		reply(nil, err)
		return
	}
	p := st.Pending
	if p == nil || p.PlanHash != dc.planHash {
		reply(nil, &approval.NotPendingError{Environment: w.env, PlanHash: dc.planHash, Pending: p})
		return
	}
	// The revision must still be the newest: ask the remote now.
	s, ok := w.d.snapshot()
	if fresh, err := w.d.source.Poll(ctx); err == nil && (!ok || fresh.Revision != s.Revision) {
		w.d.offer(fresh)
		s, ok = fresh, true
	}
	if !ok || s.Revision != p.Revision {
		_ = w.pass(ctx) // supersedes the pending plan and proposes the newest
		notPending()
		return
	}
	var plan reconcile.Plan
	_ = json.Unmarshal(p.Plan, &plan)
	prop := approval.Proposal{Environment: w.env, Revision: p.Revision, RevisionTime: s.Time, Plan: &plan}
	if !dc.approve {
		out, err := w.recordRejection(ctx, prop, dc)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(p, nil)
		w.completed(ctx, prop, out)
		w.d.log.Info("plan rejected", "environment", w.env, "planHash", p.PlanHash, "by", dc.who)
		return
	}
	envM, fresh, err := w.plan(ctx, s)
	if err != nil {
		reply(nil, err)
		return
	}
	if fresh.PlanHash != p.PlanHash {
		// The cluster or the locks changed since the plan was proposed.
		st, _ := w.d.store.Load(ctx, w.env)
		if st == nil {
			st = &EnvState{Pending: p}
		}
		_ = w.act(ctx, s, envM, fresh, st)
		notPending()
		return
	}
	reply(p, nil)
	w.d.log.Info("plan approved", "environment", w.env, "planHash", p.PlanHash, "by", dc.who)
	prop.Plan = fresh
	if err := w.apply(ctx, s, envM, prop, dc.who); err != nil && ctx.Err() == nil {
		w.d.log.Error(err, "applying approved plan", "environment", w.env)
	}
}

// recordRejection records the rejection of the pending plan prop in the
// history and returns its outcome.
func (w *worker) recordRejection(ctx context.Context, prop approval.Proposal, dc decision) (approval.Outcome, error) {
	now := time.Now().UTC()
	out := approval.Outcome{Result: approval.ResultRejected, Approver: dc.who, Message: dc.reason, Started: now, Finished: now}
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: dc.who,
		Result: out.Result, Message: out.Message, Started: now, Finished: now}
	if err := w.d.store.Record(ctx, w.env, e); err != nil {
		return out, err
	}
	w.d.metrics.setPending(w.env, false)
	return out, nil
}
