package daemon

import (
	"context"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/pass"
)

// A pass over an environment is a list of steps run in order over one
// pass.Pass value (internal/pass): fetch → resolve → plan → gate → apply →
// verify → release → record. The worker runs them (runSteps), each step
// timed and traced, a failure counted under its step's reason, and writes
// the status once, when the pass ends (EndPass). The steps are the worker's
// (fetch, resolve, plan: steps.go) and its rooms': the gate step is
// internal/gate's Keeper, the steps from apply on internal/deploy's
// Applier. A decision runs the steps from apply on, over a pass it makes.

// runSteps runs steps over p in order until one fails or p is done,
// timing each.
func (w *worker) runSteps(ctx context.Context, p *pass.Pass, steps []pass.Step) error {
	for _, s := range steps {
		if p.Done {
			return nil
		}
		begun := time.Now()
		sctx, span := w.tracer.Step(ctx, string(s.Name))
		err := s.Run(sctx, p)
		endStep(span, p, err)
		d := time.Since(begun)
		p.Times = append(p.Times, pass.StepTime{Step: s.Name, Duration: d})
		w.metrics.ObserveStep(w.env, string(s.Name), d)
		if err != nil {
			if r := pass.ReasonOf(err); r != "" {
				w.metrics.Fail(w.env, r)
			}
			return err
		}
	}
	return nil
}

// EndPass ends p: the status it observed is written (the one place a pass
// writes it).
func (w *worker) EndPass(ctx context.Context, p *pass.Pass) {
	if o := p.Observed; o != nil {
		w.writeStatus(ctx, o.Snap, o)
	}
}
