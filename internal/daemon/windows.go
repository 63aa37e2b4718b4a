package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// windows are an environment's deploy windows (environments.<env>.windows) as its worker asks them,
// judged by internal/policy on the API server's clock. While they are closed an approved or
// auto-approved plan is deferred: nothing is patched, the phase is Deferred, and a timer (not a poll)
// wakes the worker when they open, to judge again and apply. The phase is kept in the state, so another
// replica, or this one after a restart, finds the plan still deferred and judges it the same.
type windows struct {
	cal *policy.Calendar
	now func() time.Time
	// wake wakes the worker (set by newWorker).
	wake func()

	mu    sync.Mutex
	timer *time.Timer
	at    time.Time
}

// judge says whether plans may be applied now. When not, the worker is woken when the windows open
// (once: a later judgement keeps the timer when it opens at the same time).
func (ws *windows) judge() policy.Verdict {
	if ws == nil || ws.cal == nil {
		return policy.Verdict{Open: true}
	}
	v := ws.cal.Judge(ws.now())
	if v.Open || v.Opens.IsZero() {
		return v
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.timer != nil && ws.at.Equal(v.Opens) {
		return v
	}
	if ws.timer != nil {
		ws.timer.Stop()
	}
	// The wait is measured on this process's monotonic clock from the API server's now: a wake-up a
	// moment early finds them closed and arms the timer again for the rest.
	ws.at = v.Opens
	ws.timer = time.AfterFunc(v.Opens.Sub(ws.now()), func() {
		ws.mu.Lock()
		ws.timer = nil
		ws.mu.Unlock()
		if ws.wake != nil {
			ws.wake()
		}
	})
	return v
}

// stop stops the timer (the worker no longer works the environment).
func (ws *windows) stop() {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.timer != nil {
		ws.timer.Stop()
		ws.timer = nil
	}
}

// deferPlan keeps p's plan (prop) from being applied while the windows are closed (v): the phase becomes
// Deferred (in st too), the gate hears it (deploy.deferred), and the pass ends. The phase is written
// once; a pass that finds it deferred already writes nothing.
func (w *worker) deferPlan(ctx context.Context, p *pass, prop approval.Proposal, v policy.Verdict) error {
	p.done = true
	if p.st.Phase != status.PhaseDeferred {
		if err := w.store.Update(ctx, w.env, func(st *state.EnvState) { st.Phase = status.PhaseDeferred }); err != nil {
			return failed(stepGate, reasonState, err)
		}
		p.st.Phase = status.PhaseDeferred
		w.log.Info("plan deferred", "environment", w.env, "revision", short(p.snap.Revision), "planHash", p.plan.PlanHash,
			"why", v.Message())
		w.deferred(ctx, prop, v)
	}
	return nil
}

// deferred tells the gates that hear it (approval.Deferrer: the notifications) that prop waits for the
// deploy window; an error is counted and logged, and the plan waits all the same.
func (w *worker) deferred(ctx context.Context, prop approval.Proposal, v policy.Verdict) {
	d, ok := w.gate.(approval.Deferrer)
	if !ok {
		return
	}
	if err := d.Deferred(ctx, prop, v.Message()); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "telling the gate the plan is deferred", "environment", w.env, "planHash", prop.Plan.PlanHash)
	}
}

// deferredApproved goes on with an approved plan the windows deferred (decide): while they are closed
// it stays deferred (done, nothing written); once they open it is applied by the steps from apply on,
// with the approvers counted. It is not that plan (ok false) when the pass planned another (a newer
// revision, the cluster changed): the gate goes on and supersedes it.
func (w *worker) deferredApproved(ctx context.Context, p *pass, tasks []promote.Task) (ok bool) {
	pp := p.st.Pending
	if p.st.Phase != status.PhaseDeferred || pp == nil || pp.Release || !pp.Complete() ||
		pp.PlanHash != p.plan.PlanHash || pp.Revision != p.snap.Revision {
		return false
	}
	if v := w.windows.judge(); !v.Open {
		p.done = true
		return true
	}
	prop := approval.Proposal{Environment: w.env, Revision: p.snap.Revision, RevisionTime: p.snap.Time, Plan: p.plan}
	w.beginRun(ctx, p, newRun{prop: prop, tasks: withApproval(tasks, true), save: true})
	p.job = &applyJob{prop: prop, approvers: pp.Approvers()}
	w.log.Info("the deploy window opened: applying the deferred plan", "environment", w.env, "planHash", pp.PlanHash,
		"by", approval.JoinApprovers(pp.Approvers()))
	return true
}

// deferApproval keeps the plan p, just approved, from being applied while the windows are closed (v):
// the phase becomes Deferred beside the pending plan and its approvals, and the approver is answered
// with the plan and why it waits.
func (w *worker) deferApproval(ctx context.Context, prop approval.Proposal, p *approval.Pending, v policy.Verdict) (*approval.Pending, error) {
	err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == p.PlanHash {
			st.Phase = status.PhaseDeferred
		}
	})
	if err != nil {
		return nil, fmt.Errorf("deferring the approved plan %s: %w", p.PlanHash, err)
	}
	w.log.Info("approved plan deferred", "environment", w.env, "planHash", p.PlanHash, "why", v.Message())
	w.deferred(ctx, prop, v)
	cp := *p
	cp.Reasons = append(slices.Clip(cp.Reasons), v.Message())
	return &cp, nil
}
