package window

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// Break-glass (environments.<env>.windows.breakGlass): a person lets one waiting plan through closed
// windows, with a reason. The plan is the one pending approval, or, in a skipConfirmation environment
// (whose plans are never pending), the plan the windows deferred, named by the status the deferring pass
// wrote. BreakGlass keeps the record beside the plan in the state (any replica may, with the plain Store:
// it only adds a record, checked against the waiting plan in the same write); the worker that applies asks
// JudgeFor, which lets exactly that plan (its planHash at its revision) through, once, and tells of it
// (Through). The next plan, or the same plan coming back after it went out, finds no unused record of its
// own and waits.

// BreakGlass keeps who's break-glass of the waiting plan planHash in store, with reason (checked already:
// approval.CheckReason). It refuses (*approval.RefusedError) when the environment has no windows or they
// are open now, or when that plan went out through them by a break-glass already (it is let through once);
// a plan that is not the one waiting (or a release approval's, which no window holds) is refused with an
// *approval.NotPendingError. A second break-glass of the same plan, before it goes out, keeps the first.
// It returns the pending plan; for a skipConfirmation environment's deferred plan, a Pending that names it,
// approved by approval.AutoApprover.
func (g *Guard) BreakGlass(ctx context.Context, store Store, planHash string, why approval.Why) (*approval.Pending, error) {
	who, reason := why.By, why.Reason
	refuse := func(why string) error {
		return &approval.RefusedError{Environment: g.c.Env, Approver: who.String(), Reason: why}
	}
	if g == nil {
		return nil, &approval.RefusedError{Approver: who.String(), Reason: "no deploy windows: there is no freeze to break; approve the plan instead"}
	}
	if g.c.Calendar == nil {
		return nil, refuse("environment " + g.c.Env + " has no deploy windows: there is no freeze to break; approve the plan instead")
	}
	now := g.c.Now().UTC()
	if v := g.c.Calendar.Judge(now); v.Open {
		return nil, refuse("the deploy windows of " + g.c.Env + " are open now: there is no freeze to break; approve the plan instead")
	}
	var (
		pending *approval.Pending
		added   bool
		used    *approval.BreakGlass
	)
	err := store.Update(ctx, g.c.Env, func(st *state.EnvState) {
		pending, added, used = nil, false, nil
		p := st.Pending
		if p == nil {
			p = deferredPlan(st)
		}
		if p == nil || p.PlanHash != planHash || p.Release {
			pending = st.Pending
			return
		}
		cp := *p
		pending = &cp
		if b := st.BreakGlassFor(p.PlanHash, p.Revision); b != nil && !b.Applied.IsZero() {
			u := *b
			used = &u
			return
		}
		added = st.AddBreakGlass(approval.BreakGlass{PlanHash: p.PlanHash, Revision: p.Revision, By: who.ID.String(), Reason: reason, At: now})
	})
	if err != nil {
		return nil, fmt.Errorf("keeping the break-glass of plan %s: %w", planHash, err)
	}
	if pending == nil || pending.PlanHash != planHash || pending.Release {
		return nil, &approval.NotPendingError{Environment: g.c.Env, PlanHash: planHash, Pending: pending}
	}
	if used != nil {
		return nil, refuse(fmt.Sprintf("plan %s of revision %s went out through the closed deploy windows of %s already (%s, at %s): "+
			"a break-glass lets a plan through once; commit a new revision, or wait for the windows to open",
			planHash, gitsource.ShortRevision(used.Revision), g.c.Env, used.Message(), used.Applied.Format(time.RFC3339)))
	}
	if added {
		g.c.Log.Info("break-glass", "environment", g.c.Env, "planHash", planHash, "by", who.String(), "reason", reason)
	}
	return pending, nil
}

// JudgeFor judges the windows for the plan planHash of revision: as Judge does, and when they are closed,
// the break-glass kept in st that lets that plan through (nil: none, or it let the plan through already;
// the plan waits).
func (g *Guard) JudgeFor(st *state.EnvState, planHash, revision string) (policy.Verdict, *approval.BreakGlass) {
	v := g.Judge()
	if v.Open || st == nil {
		return v, nil
	}
	if b := st.BreakGlassFor(planHash, revision); b != nil && b.Applied.IsZero() {
		cp := *b
		return v, &cp
	}
	return v, nil
}

// Through records that prop's plan goes out through the closed windows by b: when b was not yet used, its
// Applied time is kept and the gates that hear it (approval.GlassBreaker: the notifications, the
// Environment's Events) are told, once. An error is the state write's; the gates' are logged and counted.
func (g *Guard) Through(ctx context.Context, prop approval.Proposal, b approval.BreakGlass) error {
	now := g.c.Now().UTC()
	first := false
	err := g.c.Store.Update(ctx, g.c.Env, func(st *state.EnvState) {
		first = false
		if r := st.BreakGlassFor(b.PlanHash, b.Revision); r != nil && r.Applied.IsZero() {
			r.Applied, first = now, true
		}
	})
	if err != nil {
		return fmt.Errorf("recording the break-glass of plan %s: %w", b.PlanHash, err)
	}
	if !first {
		return nil
	}
	b.Applied = now
	g.c.Log.Info("the plan goes out through the closed deploy windows", "environment", g.c.Env, "planHash", b.PlanHash,
		"by", b.By, "reason", b.Reason)
	if gb, ok := g.c.Gate.(approval.GlassBreaker); ok {
		if err := gb.BrokeGlass(ctx, prop, b); err != nil {
			if g.c.GateFailed != nil {
				g.c.GateFailed()
			}
			g.c.Log.Error(err, "telling the gate of the break-glass", "environment", g.c.Env, "planHash", b.PlanHash)
		}
	}
	return nil
}

// deferredPlan is the plan a skipConfirmation environment's windows deferred, as a Pending approved by
// approval.AutoApprover (nil: none). Such a plan is never recorded as pending: the phase is Deferred with
// nothing pending or in flight, and the status the deferring pass wrote (the observation) names its
// planHash and revision.
func deferredPlan(st *state.EnvState) *approval.Pending {
	if st.Pending != nil || st.InFlight != nil || st.Phase != status.PhaseDeferred || len(st.Status) == 0 {
		return nil
	}
	var obs struct {
		Revision string `json:"revision"`
		PlanHash string `json:"planHash"`
	}
	if json.Unmarshal(st.Status, &obs) != nil || obs.PlanHash == "" || obs.Revision == "" {
		return nil
	}
	return &approval.Pending{Revision: obs.Revision, PlanHash: obs.PlanHash,
		Approvals: []approval.Approval{{Approver: approval.AutoApprover}}}
}
