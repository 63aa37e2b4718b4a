package daemon

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// WithTracing traces the daemon's work with t (internal/tracing's deploy
// tracer, of the process's provider that internal/wire builds): a span per
// pass (the child of the push's receipt that brought its revision) and per
// step, whose work (each patch, the rollout wait) is their children; a
// span per decision under the request that took it, with the approval's
// wait; a span per verification task, Error when it fails. Default:
// nothing is traced.
func WithTracing(t *tracing.Deploys) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("configuring daemon: nil tracer")
		}
		o.tracer = t
		return nil
	}
}

// endStep ends a step's span with what the pass knows by then (the
// revision, the plan's hash), marking it Error when the step failed.
func endStep(span trace.Span, p *pass.Pass, err error) {
	if !span.IsRecording() {
		return
	}
	if r := p.Snap.Revision; r != "" {
		span.SetAttributes(tracing.AttrRevision.String(r))
	}
	if p.Plan != nil {
		span.SetAttributes(tracing.AttrPlanHash.String(p.Plan.PlanHash))
	}
	tracing.End(span, err)
}

// tracedTasks are tasks, each traced as a span under the step that runs it
// (verify), named by its kind and marked Error when it fails.
func tracedTasks(t *tracing.Deploys, tasks map[string]sequence.Runner) map[string]sequence.Runner {
	if !t.Enabled() || len(tasks) == 0 {
		return tasks
	}
	out := make(map[string]sequence.Runner, len(tasks))
	for name, run := range tasks {
		out[name] = func(ctx context.Context, r sequence.Request) (sequence.Result, error) {
			ctx, span := t.Step(ctx, "verification "+name)
			res, err := run(ctx, r)
			if span.IsRecording() {
				span.SetAttributes(tracing.AttrEnvironment.String(r.Environment), tracing.AttrRevision.String(r.Revision),
					tracing.AttrTask.String(strconv.Itoa(r.Task.Index)), tracing.AttrResult.String(res.Result))
				if err == nil && res.Result == promote.ResultFail {
					span.SetStatus(codes.Error, res.Message)
				}
			}
			tracing.End(span, err)
			return res, err
		}
	}
	return out
}
