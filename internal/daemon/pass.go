package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// A pass over an environment is a list of steps run in order over one pass
// value, as source-controller's reconcilers are: each step reads what the
// steps before it found and adds what it finds, and returns a *stepError
// naming itself and the reason it failed (the label of
// stagehand_failures_total). The status is written once, when the pass ends
// (endPass); the in-flight record is written before the first patch, because
// a leader that dies during the apply must know what it was applying.
//
//	fetch    the newest snapshot and the state; a rollback cut short is finished first
//	resolve  the environment's manifest at the snapshot
//	plan     the plan against the live targets (history rewritten or not)
//	gate     what the phase and the plan call for: keep waiting, propose, or let an apply through
//	apply    the in-flight record, the patches (under the lock re-checks) and the rollouts
//	verify   the deployment task's result and the sequence's tasks after it
//	release  the release approval's wait, when the sequence has one after the deployment
//	record   the history, the gate's outcome, or the rollback
//
// A decision (decide) runs the steps from apply on, over a pass it makes.

// stepName names a step: the label of stagehand_step_duration_seconds.
type stepName string

const (
	stepFetch   stepName = "fetch"
	stepResolve stepName = "resolve"
	stepPlan    stepName = "plan"
	stepGate    stepName = "gate"
	stepApply   stepName = "apply"
	stepVerify  stepName = "verify"
	stepRelease stepName = "release"
	stepRecord  stepName = "record"
)

// stepNames are the steps in pass order.
var stepNames = []stepName{stepFetch, stepResolve, stepPlan, stepGate, stepApply, stepVerify, stepRelease, stepRecord}

// reason is why something failed: the stage label of stagehand_failures_total.
type reason = meter.Reason

const (
	reasonFetch    = meter.ReasonFetch
	reasonResolve  = meter.ReasonResolve
	reasonPlan     = meter.ReasonPlan
	reasonApply    = meter.ReasonApply
	reasonState    = meter.ReasonState
	reasonGate     = meter.ReasonGate
	reasonRollback = meter.ReasonRollback
)

// stepError is a step's failure: which step, why (counted under that
// reason when the pass ends), and the error.
type stepError struct {
	Step   stepName
	Reason reason
	Err    error
}

func (e *stepError) Error() string { return e.Err.Error() }
func (e *stepError) Unwrap() error { return e.Err }

// failed is err as step's failure for reason (nil when err is nil).
func failed(step stepName, r reason, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{Step: step, Reason: r, Err: err}
}

// step is one step of a pass.
type step struct {
	name stepName
	run  func(context.Context, *pass) error
}

// stepTime is how long a step of a pass took.
type stepTime struct {
	Step     stepName
	Duration time.Duration
}

// pass is what one pass over an environment found, step by step.
type pass struct {
	// snap is the snapshot planned: the newest, or the pending plan's own
	// when it is kept at a newer revision that changes nothing here.
	snap gitsource.Snapshot
	// st is the state read by fetch; the steps keep it in step with what
	// they write, so that none reads it again before the first patch.
	st *state.EnvState
	// envM is the manifest resolved at snap, plan the plan made of it.
	envM *manifest.Environment
	plan *reconcile.Plan
	// job is the apply the gate let through (or a decision, or a run
	// continued); nil: nothing to apply.
	job *applyJob
	// observed is what the status says when the pass ends (nil: nothing
	// new was observed).
	observed *observation
	// done ends the pass after the step that set it.
	done bool
	// times are the steps run and how long each took.
	times []stepTime
}

// observation is what a pass observed, for the status: the manifest, the
// plan, or why either could not be had.
type observation struct {
	// snap is the snapshot observed: the newest when the plan step
	// observed it, though a pending plan kept at a newer revision then
	// makes the pass go on at the plan's own.
	snap gitsource.Snapshot
	envM *manifest.Environment
	plan *reconcile.Plan
	err  error
}

// observe makes the status at the end of the pass say envM, plan and err.
func (p *pass) observe(envM *manifest.Environment, plan *reconcile.Plan, err error) {
	p.observed = &observation{snap: p.snap, envM: envM, plan: plan, err: err}
}

// applyJob is an apply under way in a pass: what was approved, and what
// the steps from apply on found.
type applyJob struct {
	prop      approval.Proposal
	approvers []string
	// started (a decision's; may be nil) is called once the apply is
	// under way; resumed is the in-flight record of an interrupted apply
	// the job continues (nil: a new apply).
	started func()
	resumed *approval.InFlight
	// continued marks a run continued after its deployment (by another
	// process, or after its release approval): nothing is patched.
	continued bool

	approver string
	res      *reconcile.Result
	out      approval.Outcome
	// reported is closed once the gate heard the apply started.
	reported chan struct{}
	// waiting: the run waits for its release approval.
	waiting bool
}

// runSteps runs steps over p in order until one fails or p is done,
// timing each.
func (w *worker) runSteps(ctx context.Context, p *pass, steps []step) error {
	for _, s := range steps {
		if p.done {
			return nil
		}
		begun := time.Now()
		sctx, span := w.tracer.Step(ctx, string(s.name))
		err := s.run(sctx, p)
		endStep(span, p, err)
		d := time.Since(begun)
		p.times = append(p.times, stepTime{Step: s.name, Duration: d})
		w.metrics.ObserveStep(w.env, string(s.name), d)
		if err != nil {
			var se *stepError
			if errors.As(err, &se) && se.Reason != "" {
				w.metrics.Fail(w.env, se.Reason)
			}
			return err
		}
	}
	return nil
}

// endPass ends p: the status it observed is written (the one place a pass
// writes it).
func (w *worker) endPass(ctx context.Context, p *pass) {
	if o := p.observed; o != nil {
		w.writeStatus(ctx, o.snap, o)
	}
}
