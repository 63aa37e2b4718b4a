package gate

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Deploy windows (environments.<env>.windows) are internal/window's: the
// worker asks its window.Guard before it applies (gate.go; internal/decision's Desk), and
// goes on here with a plan the windows deferred once they open, or once a
// break-glass lets it through them (window.Guard.JudgeFor): an approved plan
// (deferredApproved), or a skipConfirmation plan (autoWaits).

// deferredApproved goes on with an approved plan the windows deferred (decision.Desk.Decide): while they are closed
// it stays deferred (done, nothing written), unless a break-glass lets it through; once they open (or
// through them) it is applied by the steps from apply on,
// with the approvers counted. It is not that plan (ok false) when the pass planned another (a newer
// revision, the cluster changed): the gate goes on and supersedes it.
func (k *Keeper) deferredApproved(ctx context.Context, p *pass.Pass, tasks []promote.Task) (ok bool) {
	pp := p.St.Pending
	if p.St.Phase != status.PhaseDeferred || pp == nil || pp.Release ||
		pp.PlanHash != p.Plan.PlanHash || pp.Revision != p.Snap.Revision {
		return false
	}
	if !k.stillApproved(ctx, p) {
		return false // awaiting approval again, with the approvals it had: the gate proposes it
	}
	v, glass := k.Windows.JudgeFor(p.St, pp.PlanHash, pp.Revision)
	if !v.Open && glass == nil {
		p.Done = true
		return true
	}
	prop := approval.Proposal{Environment: k.Env, Revision: p.Snap.Revision, RevisionTime: p.Snap.Time, Plan: p.Plan}
	if glass != nil {
		// A break-glass lets this plan through the closed windows, once.
		if err := k.Windows.Through(ctx, prop, *glass); err != nil {
			k.Metrics.Fail(k.Env, meter.ReasonState)
			k.Log.Error(err, "letting the deferred plan through by its break-glass", "environment", k.Env, "planHash", pp.PlanHash)
			p.Done = true
			return true
		}
	}
	k.Seq.Begin(ctx, delivery.Start{State: p.St, Env: p.EnvM, Prop: prop, Tasks: delivery.WithApproval(tasks, true), Save: true})
	p.Job = &pass.Job{Prop: prop, Approvers: pp.Approvers()}
	k.Log.Info("the deploy window opened: applying the deferred plan", "environment", k.Env, "planHash", pp.PlanHash,
		"by", approval.JoinApprovers(pp.Approvers()))
	return true
}

// autoWaits judges the windows for prop, an auto-approved plan (skipConfirmation), which is never
// pending: while they are closed it is deferred (wait, p done), unless a break-glass kept for this plan
// at its revision (named by the status the deferring pass wrote) lets it through them, once: the gates
// hear of it (Through) and the gate step goes on to the apply. An error is a state write's.
func (k *Keeper) autoWaits(ctx context.Context, p *pass.Pass, prop approval.Proposal) (wait bool, err error) {
	v, glass := k.Windows.JudgeFor(p.St, prop.Plan.PlanHash, prop.Revision)
	if v.Open {
		return false, nil
	}
	if glass == nil {
		p.Done = true
		return true, k.Windows.Defer(ctx, p.St, prop, v)
	}
	if err := k.Windows.Through(ctx, prop, *glass); err != nil {
		p.Done = true
		return true, err
	}
	k.Log.Info("applying the deferred plan through the closed deploy windows", "environment", k.Env, "planHash", prop.Plan.PlanHash,
		"by", glass.By)
	return false, nil
}

// stillApproved judges the deferred plan of p against the approval policy of now: a restart with a larger
// approvals.required (or rules that ask more) may leave it short. It is then awaiting approval again,
// in the state and in p, its approvals kept and its requirement shown ("1 of 2"), so that the gate
// proposes it with its tally rather than replacing it with a plan of no approvals.
func (k *Keeper) stillApproved(ctx context.Context, p *pass.Pass) bool {
	pp := p.St.Pending
	need := *pp
	k.Approvals.Shows(ctx, p.St, &need)
	if need.Complete() {
		return true
	}
	err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) {
		if sp := st.Pending; sp != nil && sp.PlanHash == pp.PlanHash && sp.Revision == pp.Revision && st.Phase == status.PhaseDeferred {
			sp.Required, sp.Reasons = need.Required, need.Reasons
			st.Phase = status.PhaseAwaitingApproval
		}
	})
	if err != nil {
		k.Metrics.Fail(k.Env, meter.ReasonState)
		k.Log.Error(err, "asking the approvals of the deferred plan again", "environment", k.Env, "planHash", pp.PlanHash)
		p.Done = true
		return true // deferred still; the next pass tries again
	}
	pp.Required, pp.Reasons = need.Required, need.Reasons
	p.St.Phase = status.PhaseAwaitingApproval
	k.Tell.Forget() // proposed again, with its tally
	k.Log.Info("the deferred plan needs more approvals under the policy of now", "environment", k.Env, "planHash", pp.PlanHash,
		"approvals", pp.Tally())
	return false
}
