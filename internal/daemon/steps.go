package daemon

import (
	"context"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// PassAndLog runs a pass and logs its error (already counted by the step
// that failed).
func (w *worker) PassAndLog(ctx context.Context) {
	if err := w.pass(ctx); err != nil && ctx.Err() == nil {
		w.log.Error(err, "reconciling environment", "environment", w.env)
	}
}

func (w *worker) request(s gitsource.Snapshot, envM *manifest.Environment) reconcile.Request {
	return reconcile.Request{Environment: envM, Revision: s.Revision, Targets: w.targets,
		LockPath: w.lockPath}
}

// passSteps are the steps of a pass (see pass.go).
func (w *worker) passSteps() []pass.Step {
	return []pass.Step{
		{Name: pass.StepFetch, Run: w.fetch}, {Name: pass.StepResolve, Run: w.resolveStep}, {Name: pass.StepPlan, Run: w.planStep},
		{Name: pass.StepGate, Run: w.keeper.GateStep}, {Name: pass.StepApply, Run: w.apply.ApplyStep}, {Name: pass.StepVerify, Run: w.apply.VerifyStep},
		{Name: pass.StepRelease, Run: w.apply.ReleaseStep}, {Name: pass.StepRecord, Run: w.apply.RecordStep},
	}
}

// RunFrom runs the pass's steps from first on over p.
func (w *worker) RunFrom(ctx context.Context, p *pass.Pass, first pass.StepName) error {
	all := w.passSteps()
	for i, s := range all {
		if s.Name == first {
			return w.runSteps(ctx, p, all[i:])
		}
	}
	return nil
}

// pass plans the newest snapshot and acts on the plan: apply (skipConfirmation,
// or an interrupted approved apply), propose, or nothing.
func (w *worker) pass(ctx context.Context) error {
	s, ok := w.source.Latest()
	if !ok {
		return nil
	}
	start := w.now()
	p := &pass.Pass{}
	ctx, span := w.tracer.Pass(ctx, w.env, s.Revision)
	err := w.runSteps(ctx, p, w.passSteps())
	w.EndPass(ctx, p)
	w.metrics.Passed(w.env, p.Snap.Revision)
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
func (w *worker) fetch(ctx context.Context, p *pass.Pass) error {
	s, ok := w.source.Latest()
	if !ok {
		p.Done = true
		return nil
	}
	p.Snap = s
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		return pass.Failed(pass.StepFetch, meter.ReasonState, err)
	}
	w.owed.Note(st)
	if rb := st.Rollback; st.Phase == status.PhaseRollingBack && rb != nil {
		w.log.Info("continuing an interrupted rollback", "environment", w.env, "revision", approval.ShortRevision(rb.Entry.Revision))
		if err := w.reverter.Continue(ctx, *rb); err != nil {
			return err
		}
		if st, err = w.store.Load(ctx, w.env); err != nil {
			return pass.Failed(pass.StepFetch, meter.ReasonState, err)
		}
	}
	p.St = st
	return nil
}

// resolveStep resolves the environment's manifest at the snapshot.
func (w *worker) resolveStep(ctx context.Context, p *pass.Pass) error {
	envM, err := w.manifests.Resolve(ctx, p.Snap, p.St) // the pin of the state the pass read
	if err != nil {
		p.Observe(nil, nil, err)
		err = fmt.Errorf("resolving manifest at %s: %w", approval.ShortRevision(p.Snap.Revision), err)
		w.keeper.Supersede(ctx, p.St, p.Snap.Revision) // the pending plan, if any, is not for the newest revision any more
		return pass.Failed(pass.StepResolve, meter.ReasonResolve, err)
	}
	p.EnvM = envM
	return nil
}

// planStep plans the manifest against the live targets; the state's
// history says whether the revision rewrites what was applied.
func (w *worker) planStep(ctx context.Context, p *pass.Pass) error {
	plan, err := w.reconciler.Plan(ctx, w.request(p.Snap, p.EnvM))
	if err != nil {
		p.Observe(p.EnvM, nil, err)
		err = fmt.Errorf("planning revision %s: %w", approval.ShortRevision(p.Snap.Revision), err)
		w.keeper.Supersede(ctx, p.St, p.Snap.Revision)
		return pass.Failed(pass.StepPlan, meter.ReasonPlan, err)
	}
	plan.HistoryRewritten = w.rewritten(ctx, p.Snap.Revision, p.St.History)
	p.Plan = plan
	p.Observe(p.EnvM, plan, nil)
	return nil
}
