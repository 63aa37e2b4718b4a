package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Store is where a run is kept: the environment's state (the daemon's
// internal/state Store, fenced by its term).
type Store interface {
	Load(ctx context.Context, env string) (*state.EnvState, error)
	Update(ctx context.Context, env string, mutate func(*state.EnvState)) error
}

// Config is what a Run uses, given by the daemon.
type Config struct {
	Env   string
	Store Store
	Now   func() time.Time
	Log   logr.Logger
	// Pipeline reads pipeline.yaml in a snapshot (nil: every environment
	// runs the default sequence).
	Pipeline func(gitsource.Snapshot) (*promote.Pipeline, error)
	// Tasks are the Runners of the task kinds implemented (test, evaluation).
	Tasks map[string]sequence.Runner
	// CheckTask (may be nil) checks a test or evaluation task's properties
	// when the environment is planned, before anything is applied.
	CheckTask func(promote.Task) error
	// Listener hears every step (may be nil).
	Listener sequence.Listener
	// Failed (may be nil) hears of each state read or write that failed
	// (logged here; the daemon counts it).
	Failed func()
	// Moved (may be nil) hears that the run moved the environment's phase,
	// or a task's progress, during a pass.
	Moved func()
}

// Run is the run of one environment's sequence: the run of the newest plan
// (also kept in the state) and its revision's service versions, for its
// events. It is used by one goroutine, the environment's worker.
type Run struct {
	Config
	seq      *sequence.State
	versions map[string]string
}

// New is the Run of c.Env.
func New(c Config) *Run { return &Run{Config: c} }

func (c Config) failed() {
	if c.Failed != nil {
		c.Failed()
	}
}

func (c Config) moved() {
	if c.Moved != nil {
		c.Moved()
	}
}

// State is the run in hand (nil when none).
func (r *Run) State() *sequence.State { return r.seq }

// Adopt makes s the run in hand (the state's, read by the caller); with
// envM, its versions are envM's.
func (r *Run) Adopt(s *sequence.State, envM *manifest.Environment) {
	r.seq = s
	if envM != nil {
		r.versions = Versions(envM)
	}
}

// Tasks returns the tasks of the environment's stage in pipeline.yaml at s
// (the default sequence when there is no pipeline.yaml or it has no such
// stage). A task kind this reconciler has no Runner for is an error naming
// the file, line, key and task.
func (r *Run) Tasks(s gitsource.Snapshot) ([]promote.Task, error) {
	if r.Pipeline == nil {
		return (&promote.Stage{}).SequenceTasks(), nil
	}
	pl, err := r.Pipeline(s)
	if errors.Is(err, fs.ErrNotExist) {
		return (&promote.Stage{}).SequenceTasks(), nil
	}
	if err != nil {
		return nil, err
	}
	for i := range pl.Stages {
		st := &pl.Stages[i]
		if st.Name != r.Env {
			continue
		}
		tasks := st.SequenceTasks()
		for _, t := range tasks {
			if t.Name != promote.TaskTest && t.Name != promote.TaskEvaluation {
				continue
			}
			if _, ok := r.Config.Tasks[t.Name]; !ok {
				return nil, fmt.Errorf("%s:%d:%d: stages[%d].sequence[%d]: this reconciler has no runner for task %q (it runs: %s; a verifier runs test and evaluation)",
					pl.File, t.Line, t.Column, i, t.Index, t.Name, implemented(r.Config.Tasks))
			}
			if r.CheckTask != nil {
				if err := r.CheckTask(t); err != nil {
					return nil, fmt.Errorf("%s:%d:%d: stages[%d].sequence[%d].properties: %w", pl.File, t.Line, t.Column, i, t.Index, err)
				}
			}
		}
		return tasks, nil
	}
	return (&promote.Stage{}).SequenceTasks(), nil
}

func implemented(tasks map[string]sequence.Runner) string {
	names := []string{promote.TaskApproval, promote.TaskDeployment, promote.TaskRelease}
	for n := range tasks {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// WithApproval puts an approval task first when a person must approve the
// plan and the sequence has no approval before its deployment (an approval
// after it is the release approval, a second decision).
func WithApproval(tasks []promote.Task, person bool) []promote.Task {
	if !person || PreApproval(tasks) {
		return tasks
	}
	return append([]promote.Task{{Name: promote.TaskApproval, Index: -1}}, tasks...)
}

// PreApproval reports whether tasks hold an approval before the deployment.
func PreApproval(tasks []promote.Task) bool {
	for _, t := range tasks {
		switch t.Name {
		case promote.TaskDeployment:
			return false
		case promote.TaskApproval:
			return true
		}
	}
	return false
}

// Versions maps each service of envM to its version, or its first
// container's tag.
func Versions(envM *manifest.Environment) map[string]string {
	out := map[string]string{}
	if envM == nil {
		return out
	}
	for _, s := range envM.Services {
		switch {
		case s.Version != "":
			out[s.Name] = s.Version
		case len(s.Containers) > 0:
			out[s.Name] = s.Containers[0].DockerTag
		}
	}
	return out
}

// Load returns the run kept in the state for revision, if it is not over.
// st is the pass's state (nil: read it).
func (r *Run) Load(ctx context.Context, st *state.EnvState, revision string) *sequence.State {
	if r.seq != nil && r.seq.Revision == revision && !r.seq.Done() {
		return r.seq
	}
	st, ok := r.Config.loadState(ctx, st)
	if !ok {
		return nil
	}
	if s := st.Sequence; s != nil && s.Revision == revision && !s.Done() {
		r.seq = s
		return s
	}
	return nil
}

// loadState is st, or the state read now when st is nil.
func (c Config) loadState(ctx context.Context, st *state.EnvState) (*state.EnvState, bool) {
	if st != nil {
		return st, true
	}
	st, err := c.Store.Load(ctx, c.Env)
	if err != nil {
		c.failed()
		c.Log.Error(err, "reading the sequence state", "environment", c.Env)
		return nil, false
	}
	return st, true
}

// Start is a run to begin: Prop's, with the Tasks of its sequence, at the
// pass's State (kept in step; nil: read it) with the resolved manifest Env;
// kept in the state at once when Save (a person approves it) or with the
// deployment's first write (an auto-approved plan).
type Start struct {
	State *state.EnvState
	Env   *manifest.Environment
	Prop  approval.Proposal
	Tasks []promote.Task
	Save  bool
}

// Begin starts the run of s.Prop (or continues the one kept for its
// revision), announcing its start and, when a person approves, the
// approval task waiting. With Save false a new run is only kept in memory:
// an auto-approved plan begins its deployment at once, and that write keeps
// the run (one state write fewer before the first patch).
func (r *Run) Begin(ctx context.Context, s Start) {
	prop := s.Prop
	r.versions = Versions(s.Env)
	if run := r.Load(ctx, s.State, prop.Revision); run != nil {
		if run.PlanHash != prop.Plan.PlanHash {
			run.PlanHash = prop.Plan.PlanHash
			r.SaveIn(ctx, "")
		}
		return
	}
	r.Abort(ctx, s.State, "replaced by revision "+gitsource.ShortRevision(prop.Revision))
	r.seq = sequence.New(sequence.Delivery{Stage: r.Env, Revision: prop.Revision, PlanHash: prop.Plan.PlanHash}, s.Tasks, r.Now().UTC())
	if s.Save {
		r.SaveIn(ctx, "")
	}
	r.emit(ctx, -1, sequence.KindStarted, ending{})
	if i := r.seq.PreApproval(); i == 0 {
		r.begin(ctx, i)
	}
}

// Abort ends a run that is not over without running the rest: its plan
// was superseded, or nothing is left to apply. st is the pass's state (nil:
// read it); the run ended is st's (the run in hand is st.Sequence then), so
// st stays in step.
func (r *Run) Abort(ctx context.Context, st *state.EnvState, why string) {
	st, ok := r.Config.loadState(ctx, st)
	if !ok {
		return
	}
	s := st.Sequence
	if s == nil || s.Done() || (st.InFlight != nil && st.InFlight.Revision == s.Revision) {
		return
	}
	r.seq = s
	r.Finish(ctx, sequence.StatusAborted, Ending{Result: promote.ResultFail, Message: "aborted: " + why})
}

// Approval is a plan approved (Prop, by Approver, with the resolved
// manifest Env) whose deployment begins, with its new in-flight record
// (nil: the record there stays, a resumed apply's).
type Approval struct {
	Env      *manifest.Environment
	Prop     approval.Proposal
	Approver string
	InFlight *approval.InFlight
}

// Approved finishes the approval task (when the run has one) and starts
// the deployment, writing the run and a.InFlight in one state write before
// announcing either step: the apply has one write to wait for before its
// first patch, not three. An error is that write's; nothing was announced
// then.
func (r *Run) Approved(ctx context.Context, a Approval) error {
	prop, approver := a.Prop, a.Approver
	run := r.Load(ctx, nil, prop.Revision)
	if run == nil {
		// Proposed before this reconciler ran sequences, or its state was lost.
		tasks := []promote.Task{{Name: promote.TaskDeployment}}
		if !approval.IsAuto(approver) {
			tasks = WithApproval(tasks, true)
		}
		r.Begin(ctx, Start{Env: a.Env, Prop: prop, Tasks: tasks, Save: true})
		run = r.seq
	}
	r.versions = Versions(a.Env)
	before := r.Copy()
	run.Approver = approver
	var announce []func(context.Context)
	if i := run.PreApproval(); i >= 0 && run.Tasks[i].Status != sequence.StatusFinished {
		announce = append(announce, r.FinishTask(i, sequence.Result{Result: promote.ResultPass, Message: "approved by " + approver}))
	}
	if i := run.Index(promote.TaskDeployment); i >= 0 {
		announce = append(announce, r.BeginTask(i))
	}
	kept := r.Copy()
	if err := r.Store.Update(ctx, r.Env, func(st *state.EnvState) {
		if a.InFlight != nil {
			st.InFlight = a.InFlight
		}
		st.Sequence, st.Phase = kept, status.PhaseApplying
	}); err != nil {
		*run = *before // not kept, not announced: the next attempt does it again
		return err
	}
	for _, f := range announce {
		f(ctx)
	}
	return nil
}

// Rejected finishes the approval task and the run with fail.
func (r *Run) Rejected(ctx context.Context, prop approval.Proposal, who, reason string) {
	run := r.Load(ctx, nil, prop.Revision)
	if run == nil {
		return
	}
	run.Approver = who
	msg := "rejected by " + who
	if reason != "" {
		msg += ": " + reason
	}
	if i := run.PreApproval(); i >= 0 {
		r.finish(ctx, i, sequence.Result{Result: promote.ResultFail, Message: msg})
	}
	r.Finish(ctx, sequence.StatusFinished, Ending{Result: promote.ResultFail, Message: msg})
}

// Deployed finishes the deployment task with out's result and, when it
// passed, runs the tasks after it (Rest). It returns the outcome to record
// and report: failed when a task failed, interrupted when ctx ended during
// one (the next leader runs it again), and the sequence's result in
// Sequence; or, with release ≥ 0, nothing to record yet: the run reached
// its release approval, task release, which the caller begins to wait for.
func (r *Run) Deployed(ctx context.Context, prop approval.Proposal, res *reconcile.Result, out approval.Outcome) (approval.Outcome, int) {
	run := r.Load(ctx, nil, prop.Revision)
	if run == nil || out.Result == approval.ResultInterrupted {
		return out, -1
	}
	if i := run.Index(promote.TaskDeployment); i >= 0 && run.Tasks[i].Status != sequence.StatusFinished {
		result := promote.ResultPass
		if out.Result != approval.ResultSucceeded {
			result = promote.ResultFail
		}
		// Deployed: the tasks after the deployment run (Verifying).
		announce := r.FinishTask(i, sequence.Result{Result: result, Message: out.Message})
		phase := status.Phase("")
		if result == promote.ResultPass {
			phase = status.PhaseVerifying
		}
		r.SaveIn(ctx, phase)
		announce(ctx)
	}
	if out.Result != approval.ResultSucceeded {
		r.Finish(ctx, sequence.EventErrored, Ending{Result: promote.ResultFail, Message: out.Message})
		out.Sequence = promote.ResultFail
		return out, -1
	}
	return r.Rest(ctx, prop, res, out)
}

// Rest runs the tasks of the run after the deployment, in order, up to
// the end or to the release approval (returned as release ≥ 0: nothing to
// record yet).
func (r *Run) Rest(ctx context.Context, prop approval.Proposal, res *reconcile.Result, out approval.Outcome) (approval.Outcome, int) {
	run := r.seq
	for i := run.Next(); i < len(run.Tasks); i = run.Next() {
		t := run.Tasks[i]
		if run.Outcome() == promote.ResultFail {
			break // a failed task ends the sequence
		}
		if t.Name == promote.TaskApproval {
			// After the deployment: an approval before it finished
			// when the plan was approved.
			return out, i
		}
		r.begin(ctx, i)
		if t.Name == promote.TaskRelease {
			r.finish(ctx, i, sequence.Result{Result: promote.ResultPass, Message: "released"})
			continue
		}
		result, err := r.Config.runTask(ctx, sequence.Request{Environment: r.Env, Stage: run.Stage, Revision: prop.Revision, Versions: r.versions,
			Applied: res, Task: promote.Task{Name: t.Name, Properties: t.Properties, Index: i}, Data: run.Spaces(i - 1)})
		if err != nil {
			out.Result = approval.ResultInterrupted
			out.Message = fmt.Sprintf("shut down during the %s task; the next leader runs it again", t.Name)
			return out, -1
		}
		r.finish(ctx, i, result)
	}
	result := run.Outcome()
	msg := ""
	if result != promote.ResultPass {
		for _, t := range run.Tasks {
			if t.Result == result {
				msg = fmt.Sprintf("task %s finished with %s: %s", t.Name, t.Result, t.Message)
				break
			}
		}
	}
	r.Finish(ctx, sequence.StatusFinished, Ending{Result: result, Message: msg})
	out.Sequence = result
	if result == promote.ResultFail {
		out.Result, out.Message = approval.ResultFailed, msg
	} else if msg != "" && out.Message == "" {
		out.Message = msg
	}
	out.Finished = r.Now().UTC()
	return out, -1
}

// runTask runs req's task with its Runner. An error is a shutdown.
func (c Config) runTask(ctx context.Context, req sequence.Request) (sequence.Result, error) {
	t := req.Task
	runner, ok := c.Tasks[t.Name]
	if !ok { // checked when the run began; the reconciler changed since
		return sequence.Result{Result: promote.ResultFail, Message: fmt.Sprintf("this reconciler has no runner for task %q (it had when the run began)", t.Name)}, nil
	}
	got, err := runner(ctx, req)
	if ctx.Err() != nil {
		return got, ctx.Err()
	}
	if err != nil {
		return sequence.Result{Result: promote.ResultFail, Message: err.Error()}, nil
	}
	switch got.Result {
	case promote.ResultPass, promote.ResultWarning, promote.ResultFail:
	default:
		return sequence.Result{Result: promote.ResultFail, Message: fmt.Sprintf("task %s returned result %q; want pass, warning or fail", t.Name, got.Result)}, nil
	}
	if len(got.Outputs) > 0 && !json.Valid(got.Outputs) {
		got.Outputs = nil
	}
	return got, nil
}

// begin triggers and starts the run's task i: one state write, two events.
func (r *Run) begin(ctx context.Context, i int) {
	announce := r.BeginTask(i)
	r.SaveIn(ctx, "")
	announce(ctx)
}

// BeginTask marks the run's task i started and returns what announces it.
func (r *Run) BeginTask(i int) func(context.Context) {
	t := &r.seq.Tasks[i]
	t.Status, t.Started = sequence.StatusStarted, r.Now().UTC()
	t.Finished, t.Result, t.Message, t.Outputs = time.Time{}, "", "", nil
	return func(ctx context.Context) {
		r.emit(ctx, i, sequence.KindTriggered, ending{})
		r.emit(ctx, i, sequence.KindStarted, ending{})
	}
}

// finish ends the run's task i with res (result, message and outputs),
// keeps it and announces it.
func (r *Run) finish(ctx context.Context, i int, res sequence.Result) {
	announce := r.FinishTask(i, res)
	r.SaveIn(ctx, "")
	announce(ctx)
}

// FinishTask ends the run's task i and returns what announces it.
func (r *Run) FinishTask(i int, res sequence.Result) func(context.Context) {
	t := &r.seq.Tasks[i]
	t.Status, t.Finished, t.Result, t.Message, t.Outputs = sequence.StatusFinished, r.Now().UTC(), res.Result, res.Message, res.Outputs
	status := sequence.EventSucceeded
	if res.Result == promote.ResultFail && t.Name == promote.TaskDeployment {
		status = sequence.EventErrored // it could not deploy; a failed check succeeded in finding a fault
	}
	return func(ctx context.Context) {
		r.emit(ctx, i, sequence.KindFinished, ending{res.Result, status, res.Message})
	}
}

// Ending is how a run ended: its result and why.
type Ending struct {
	Result  string
	Message string
}

// Finish ends the run with status (finished or aborted; errored: finished,
// announced as errored) and e.
func (r *Run) Finish(ctx context.Context, status string, e Ending) {
	run := r.seq
	eventStatus := sequence.EventSucceeded
	switch status {
	case sequence.StatusAborted:
		eventStatus = sequence.EventAborted
	case sequence.EventErrored:
		eventStatus, status = sequence.EventErrored, sequence.StatusFinished
	}
	run.Status, run.Result, run.Message, run.Finished = status, e.Result, e.Message, r.Now().UTC()
	r.SaveIn(ctx, "")
	r.emit(ctx, -1, sequence.KindFinished, ending{e.Result, eventStatus, e.Message})
}

// SaveIn keeps the run in the state, moving the environment to phase
// (unless "": the phase stays), in one write; a failure is logged and
// counted.
func (r *Run) SaveIn(ctx context.Context, phase status.Phase) {
	// Kept during a shutdown too: the next leader continues from here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	run := r.Copy()
	if err := r.Store.Update(ctx, r.Env, func(st *state.EnvState) {
		st.Sequence = run
		if phase != "" {
			st.Phase = phase
		}
	}); err != nil {
		r.failed()
		r.Log.Error(err, "recording the sequence state", "environment", r.Env, "revision", gitsource.ShortRevision(run.Revision))
		return
	}
	if !run.Done() && run.Next() < len(run.Tasks) {
		// Verifying, and each task's progress; a run with nothing left to
		// run is told as its pass ends.
		r.moved()
	}
}

// Copy is a copy of the run to keep in the state.
func (r *Run) Copy() *sequence.State {
	run := *r.seq
	run.Tasks = slices.Clone(r.seq.Tasks)
	return &run
}

// ending is how a run or task ended, as its finished event says (empty for
// the other events).
type ending struct{ result, status, msg string }

// emit announces a step of the run: the run itself (task -1) or task i.
func (r *Run) emit(ctx context.Context, i int, kind string, end ending) {
	if r.Listener == nil {
		return
	}
	run := r.seq
	last := i
	if i < 0 {
		last = len(run.Tasks) - 1
	}
	e := sequence.Event{Environment: r.Env, Kind: kind, Time: r.Now().UTC(), Data: sequence.Data{
		Stage: run.Stage, Sequence: run.Sequence, Environment: r.Env, Revision: run.Revision, PlanHash: run.PlanHash,
		Result: end.result, Status: end.status, Message: end.msg, Approver: run.Approver, Versions: r.versions, Tasks: run.Spaces(last)}}
	if i < 0 {
		e.Name = run.Stage + "." + run.Sequence + "." + kind
	} else {
		e.Task = run.Tasks[i].Name
		e.Name = e.Task + "." + kind
	}
	r.Listener.SequenceEvent(ctx, e)
}

// SupersededWhy says why a run of a plan superseded by revision by ends
// ("": nothing is left to apply).
func SupersededWhy(by string) string {
	if by == "" {
		return "nothing is left to apply"
	}
	return "superseded by revision " + gitsource.ShortRevision(by)
}
