package pass

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

// A pass over an environment is a list of steps run in order over one Pass
// value, as source-controller's reconcilers are: each step reads what the
// steps before it found and adds what it finds, and returns an error
// naming itself and the reason it failed (Failed) (the label of
// stagehand_failures_total). The status is written once, when the pass ends
// (Runner.EndPass); the in-flight record is written before the first patch,
// because a leader that dies during the apply must know what it was
// applying.
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
// A decision runs the steps from apply on, over a pass it makes.

// StepName names a step: the label of stagehand_step_duration_seconds.
type StepName string

// The steps of a pass, in order.
const (
	StepFetch   StepName = "fetch"
	StepResolve StepName = "resolve"
	StepPlan    StepName = "plan"
	StepGate    StepName = "gate"
	StepApply   StepName = "apply"
	StepVerify  StepName = "verify"
	StepRelease StepName = "release"
	StepRecord  StepName = "record"
)

// StepNames are the steps in pass order.
var StepNames = []StepName{StepFetch, StepResolve, StepPlan, StepGate, StepApply, StepVerify, StepRelease, StepRecord}

// stepError is a step's failure: which step, why (counted under that
// reason when the pass ends), and the error.
type stepError struct {
	step   StepName
	reason meter.Reason
	err    error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// Failed is err as step's failure for r (nil when err is nil): its message
// is err's, and ReasonOf reads r back.
func Failed(step StepName, r meter.Reason, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{step: step, reason: r, err: err}
}

// ReasonOf is the reason of the step failure err is or wraps (Failed), the
// stage of stagehand_failures_total it is counted under; "" when err is no
// step's failure or its step gave no reason.
func ReasonOf(err error) meter.Reason {
	var se *stepError
	if errors.As(err, &se) {
		return se.reason
	}
	return ""
}

// Step is one step of a pass.
type Step struct {
	Name StepName
	Run  func(context.Context, *Pass) error
}

// StepTime is how long a step of a pass took.
type StepTime struct {
	Step     StepName
	Duration time.Duration
}

// Pass is what one pass over an environment found, step by step.
type Pass struct {
	// Snap is the snapshot planned: the newest, or the pending plan's own
	// when it is kept at a newer revision that changes nothing here.
	Snap gitsource.Snapshot
	// St is the state read by fetch; the steps keep it in step with what
	// they write, so that none reads it again before the first patch.
	St *state.EnvState
	// EnvM is the manifest resolved at Snap, Plan the plan made of it.
	EnvM *manifest.Environment
	Plan *reconcile.Plan
	// Job is the apply the gate let through (or a decision, or a run
	// continued); nil: nothing to apply.
	Job *Job
	// Observed is what the status says when the pass ends (nil: nothing
	// new was observed).
	Observed *Observation
	// Done ends the pass after the step that set it.
	Done bool
	// Times are the steps run and how long each took.
	Times []StepTime
}

// Observation is what a pass observed, for the status: the manifest, the
// plan, or why either could not be had.
type Observation struct {
	// Snap is the snapshot observed: the newest when the plan step
	// observed it, though a pending plan kept at a newer revision then
	// makes the pass go on at the plan's own.
	Snap gitsource.Snapshot
	EnvM *manifest.Environment
	Plan *reconcile.Plan
	Err  error
}

// Observe makes the status at the end of the pass say envM, plan and err.
func (p *Pass) Observe(envM *manifest.Environment, plan *reconcile.Plan, err error) {
	p.Observed = &Observation{Snap: p.Snap, EnvM: envM, Plan: plan, Err: err}
}

// Job is an apply under way in a pass: what was approved, and what the
// steps from apply on found.
type Job struct {
	Prop      approval.Proposal
	Approvers []string
	// Started (a decision's; may be nil) is called once the apply is
	// under way; Resumed is the in-flight record of an interrupted apply
	// the job continues (nil: a new apply).
	Started func()
	Resumed *approval.InFlight
	// Continued marks a run continued after its deployment (by another
	// process, or after its release approval): nothing is patched.
	Continued bool

	Approver string
	Res      *reconcile.Result
	Out      approval.Outcome
	// Reported is closed once the gate heard the apply started.
	Reported chan struct{}
	// Waiting: the run waits for its release approval.
	Waiting bool
}

// Runner is what the rooms a worker drives ask of its passes: run one (and
// log its error), run the steps from first on over a Pass value and end
// it, continue a run after its deployment, ask for a pass.
type Runner interface {
	PassAndLog(ctx context.Context)
	RunFrom(ctx context.Context, p *Pass, first StepName) error
	EndPass(ctx context.Context, p *Pass)
	ContinueRun(p *Pass) bool
	WakeUp()
}
