package daemon

import (
	"context"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// passAndLog runs a pass and logs its error (already counted by the step
// that failed).
func (w *worker) passAndLog(ctx context.Context) {
	if err := w.pass(ctx); err != nil && ctx.Err() == nil {
		w.log.Error(err, "reconciling environment", "environment", w.env)
	}
}

func (w *worker) request(s gitsource.Snapshot, envM *manifest.Environment) reconcile.Request {
	return reconcile.Request{Environment: envM, Revision: s.Revision, Targets: w.targets,
		LockPath: w.lockPath}
}

// passSteps are the steps of a pass (see pass.go).
func (w *worker) passSteps() []step {
	return []step{
		{stepFetch, w.fetch}, {stepResolve, w.resolveStep}, {stepPlan, w.planStep}, {stepGate, w.keeper.gateStep},
		{stepApply, w.apply.applyStep}, {stepVerify, w.apply.verifyStep}, {stepRelease, w.apply.releaseStep}, {stepRecord, w.apply.recordStep},
	}
}

// pass plans the newest snapshot and acts on the plan: apply (skipConfirmation,
// or an interrupted approved apply), propose, or nothing.
func (w *worker) pass(ctx context.Context) error {
	s, ok := w.source.Latest()
	if !ok {
		return nil
	}
	start := w.now()
	p := &pass{}
	ctx, span := w.tracer.Pass(ctx, w.env, s.Revision)
	err := w.runSteps(ctx, p, w.passSteps())
	w.endPass(ctx, p)
	w.metrics.Passed(w.env, p.snap.Revision)
	w.tracer.EndPass(span, w.env, err)
	result := "ok"
	if err != nil {
		result = "error"
	}
	w.metrics.ObservePass(w.env, result, w.now().Sub(start))
	return err
}

// fetch takes the newest snapshot the leader has seen and reads the state;
// a rollback cut short (a restart, the other replica) is finished before
// anything is planned.
func (w *worker) fetch(ctx context.Context, p *pass) error {
	s, ok := w.source.Latest()
	if !ok {
		p.done = true
		return nil
	}
	p.snap = s
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		return failed(stepFetch, reasonState, err)
	}
	w.owed.Note(st)
	if rb := st.Rollback; st.Phase == status.PhaseRollingBack && rb != nil {
		w.log.Info("continuing an interrupted rollback", "environment", w.env, "revision", approval.ShortRevision(rb.Entry.Revision))
		if err := w.reverter.Continue(ctx, *rb); err != nil {
			return err
		}
		if st, err = w.store.Load(ctx, w.env); err != nil {
			return failed(stepFetch, reasonState, err)
		}
	}
	p.st = st
	return nil
}

// resolveStep resolves the environment's manifest at the snapshot.
func (w *worker) resolveStep(ctx context.Context, p *pass) error {
	envM, err := w.manifests.Resolve(ctx, p.snap, p.st) // the pin of the state the pass read
	if err != nil {
		p.observe(nil, nil, err)
		err = fmt.Errorf("resolving manifest at %s: %w", approval.ShortRevision(p.snap.Revision), err)
		w.keeper.supersede(ctx, p.st, p.snap.Revision) // the pending plan, if any, is not for the newest revision any more
		return failed(stepResolve, reasonResolve, err)
	}
	p.envM = envM
	return nil
}

// planStep plans the manifest against the live targets; the state's
// history says whether the revision rewrites what was applied.
func (w *worker) planStep(ctx context.Context, p *pass) error {
	plan, err := w.reconciler.Plan(ctx, w.request(p.snap, p.envM))
	if err != nil {
		p.observe(p.envM, nil, err)
		err = fmt.Errorf("planning revision %s: %w", approval.ShortRevision(p.snap.Revision), err)
		w.keeper.supersede(ctx, p.st, p.snap.Revision)
		return failed(stepPlan, reasonPlan, err)
	}
	plan.HistoryRewritten = w.rewritten(ctx, p.snap.Revision, p.st.History)
	p.plan = plan
	p.observe(p.envM, plan, nil)
	return nil
}
