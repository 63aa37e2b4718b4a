package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Deploy windows (environments.<env>.windows) are internal/window's: the
// worker asks its window.Guard before it applies (gate.go, decision.go), and
// goes on here with a plan the windows deferred once they open, or once a
// break-glass lets it through them (window.Guard.JudgeFor).

// deferredApproved goes on with an approved plan the windows deferred (decide): while they are closed
// it stays deferred (done, nothing written), unless a break-glass lets it through; once they open (or
// through them) it is applied by the steps from apply on,
// with the approvers counted. It is not that plan (ok false) when the pass planned another (a newer
// revision, the cluster changed): the gate goes on and supersedes it.
func (w *worker) deferredApproved(ctx context.Context, p *pass, tasks []promote.Task) (ok bool) {
	pp := p.st.Pending
	if p.st.Phase != status.PhaseDeferred || pp == nil || pp.Release || !pp.Complete() ||
		pp.PlanHash != p.plan.PlanHash || pp.Revision != p.snap.Revision {
		return false
	}
	v, glass := w.windows.JudgeFor(p.st, pp.PlanHash, pp.Revision)
	if !v.Open && glass == nil {
		p.done = true
		return true
	}
	prop := approval.Proposal{Environment: w.env, Revision: p.snap.Revision, RevisionTime: p.snap.Time, Plan: p.plan}
	if glass != nil {
		// A break-glass lets this plan through the closed windows, once.
		if err := w.windows.Through(ctx, prop, *glass); err != nil {
			w.metrics.fail(w.env, reasonState)
			w.log.Error(err, "letting the deferred plan through by its break-glass", "environment", w.env, "planHash", pp.PlanHash)
			p.done = true
			return true
		}
	}
	w.seq.Begin(ctx, delivery.Start{State: p.st, Env: p.envM, Prop: prop, Tasks: delivery.WithApproval(tasks, true), Save: true})
	p.job = &applyJob{prop: prop, approvers: pp.Approvers()}
	w.log.Info("the deploy window opened: applying the deferred plan", "environment", w.env, "planHash", pp.PlanHash,
		"by", approval.JoinApprovers(pp.Approvers()))
	return true
}
