package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Deploy windows (environments.<env>.windows) are internal/window's: the
// worker asks its window.Guard before it applies (gate.go, decision.go), and
// goes on here with a plan the windows deferred once they open, or once a
// break-glass lets it through them (window.Guard.JudgeFor): an approved plan
// (deferredApproved), or a skipConfirmation plan (autoWaits).

// deferredApproved goes on with an approved plan the windows deferred (decide): while they are closed
// it stays deferred (done, nothing written), unless a break-glass lets it through; once they open (or
// through them) it is applied by the steps from apply on,
// with the approvers counted. It is not that plan (ok false) when the pass planned another (a newer
// revision, the cluster changed): the gate goes on and supersedes it.
func (k *gatekeeper) deferredApproved(ctx context.Context, p *pass, tasks []promote.Task) (ok bool) {
	pp := p.st.Pending
	if p.st.Phase != status.PhaseDeferred || pp == nil || pp.Release ||
		pp.PlanHash != p.plan.PlanHash || pp.Revision != p.snap.Revision {
		return false
	}
	if !k.stillApproved(ctx, p) {
		return false // awaiting approval again, with the approvals it had: the gate proposes it
	}
	v, glass := k.windows.JudgeFor(p.st, pp.PlanHash, pp.Revision)
	if !v.Open && glass == nil {
		p.done = true
		return true
	}
	prop := approval.Proposal{Environment: k.env, Revision: p.snap.Revision, RevisionTime: p.snap.Time, Plan: p.plan}
	if glass != nil {
		// A break-glass lets this plan through the closed windows, once.
		if err := k.windows.Through(ctx, prop, *glass); err != nil {
			k.metrics.Fail(k.env, reasonState)
			k.log.Error(err, "letting the deferred plan through by its break-glass", "environment", k.env, "planHash", pp.PlanHash)
			p.done = true
			return true
		}
	}
	k.seq.Begin(ctx, delivery.Start{State: p.st, Env: p.envM, Prop: prop, Tasks: delivery.WithApproval(tasks, true), Save: true})
	p.job = &applyJob{prop: prop, approvers: pp.Approvers()}
	k.log.Info("the deploy window opened: applying the deferred plan", "environment", k.env, "planHash", pp.PlanHash,
		"by", approval.JoinApprovers(pp.Approvers()))
	return true
}

// autoWaits judges the windows for prop, an auto-approved plan (skipConfirmation), which is never
// pending: while they are closed it is deferred (wait, p done), unless a break-glass kept for this plan
// at its revision (named by the status the deferring pass wrote) lets it through them, once: the gates
// hear of it (Through) and the gate step goes on to the apply. An error is a state write's.
func (k *gatekeeper) autoWaits(ctx context.Context, p *pass, prop approval.Proposal) (wait bool, err error) {
	v, glass := k.windows.JudgeFor(p.st, prop.Plan.PlanHash, prop.Revision)
	if v.Open {
		return false, nil
	}
	if glass == nil {
		p.done = true
		return true, k.windows.Defer(ctx, p.st, prop, v)
	}
	if err := k.windows.Through(ctx, prop, *glass); err != nil {
		p.done = true
		return true, err
	}
	k.log.Info("applying the deferred plan through the closed deploy windows", "environment", k.env, "planHash", prop.Plan.PlanHash,
		"by", glass.By)
	return false, nil
}

// stillApproved judges the deferred plan of p against the approval policy of now: a restart with a larger
// approvals.required (or rules that ask more) may leave it short. It is then awaiting approval again,
// in the state and in p, its approvals kept and its requirement shown ("1 of 2"), so that the gate
// proposes it with its tally rather than replacing it with a plan of no approvals.
func (k *gatekeeper) stillApproved(ctx context.Context, p *pass) bool {
	pp := p.st.Pending
	need := *pp
	k.approvals.Shows(ctx, p.st, &need)
	if need.Complete() {
		return true
	}
	err := k.store.Update(ctx, k.env, func(st *state.EnvState) {
		if sp := st.Pending; sp != nil && sp.PlanHash == pp.PlanHash && sp.Revision == pp.Revision && st.Phase == status.PhaseDeferred {
			sp.Required, sp.Reasons = need.Required, need.Reasons
			st.Phase = status.PhaseAwaitingApproval
		}
	})
	if err != nil {
		k.metrics.Fail(k.env, reasonState)
		k.log.Error(err, "asking the approvals of the deferred plan again", "environment", k.env, "planHash", pp.PlanHash)
		p.done = true
		return true // deferred still; the next pass tries again
	}
	pp.Required, pp.Reasons = need.Required, need.Reasons
	p.st.Phase = status.PhaseAwaitingApproval
	k.tell.Forget() // proposed again, with its tally
	k.log.Info("the deferred plan needs more approvals under the policy of now", "environment", k.env, "planHash", pp.PlanHash,
		"approvals", pp.Tally())
	return false
}
