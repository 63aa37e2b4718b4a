package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The daemon runs each environment's delivery sequence (pipeline.yaml's
// stages[].sequence) for every plan it deploys: approval → deployment
// (apply and rollout) → test/evaluation (the Runners given with WithTasks)
// → release. The run is kept in the state (EnvState.Sequence) at every
// step, so that a new leader continues it, and every step is announced to
// the Listener. The gate hears Completed once the whole sequence has run:
// the stagehand/<env> check run is the sequence's result, which is what
// prbot's requires.healthy reads.

// sequenceTasks returns the tasks of env's stage in pipeline.yaml at s (the
// default sequence when there is no pipeline.yaml or it has no such stage).
// A task kind this reconciler has no Runner for is an error naming the file,
// line, key and task.
func (w *worker) sequenceTasks(s gitsource.Snapshot) ([]promote.Task, error) {
	if w.pipeline == nil {
		return (&promote.Stage{}).SequenceTasks(), nil
	}
	pl, err := w.pipeline(s)
	if errors.Is(err, fs.ErrNotExist) {
		return (&promote.Stage{}).SequenceTasks(), nil
	}
	if err != nil {
		return nil, err
	}
	for i := range pl.Stages {
		st := &pl.Stages[i]
		if st.Name != w.env {
			continue
		}
		tasks := st.SequenceTasks()
		for _, t := range tasks {
			if t.Name != promote.TaskTest && t.Name != promote.TaskEvaluation {
				continue
			}
			if _, ok := w.tasks[t.Name]; !ok {
				return nil, fmt.Errorf("%s:%d:%d: stages[%d].sequence[%d]: this reconciler has no runner for task %q (it runs: %s; a verifier runs test and evaluation)",
					pl.File, t.Line, t.Column, i, t.Index, t.Name, implemented(w.tasks))
			}
			if w.checkTask != nil {
				if err := w.checkTask(t); err != nil {
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

// withApproval puts an approval task first when a person must approve the
// plan and the sequence has no approval before its deployment (an approval
// after it is the release approval, a second decision).
func withApproval(tasks []promote.Task, person bool) []promote.Task {
	if !person || preApproval(tasks) {
		return tasks
	}
	return append([]promote.Task{{Name: promote.TaskApproval, Index: -1}}, tasks...)
}

// versions maps each service of envM to its version, or its first
// container's tag.
func versions(envM *manifest.Environment) map[string]string {
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

// loadRun returns the run kept in the state for revision, if it is not
// over. st is the pass's state (nil: read it).
func (w *worker) loadRun(ctx context.Context, st *state.EnvState, revision string) *sequence.State {
	if w.seq != nil && w.seq.Revision == revision && !w.seq.Done() {
		return w.seq
	}
	st, ok := w.runState(ctx, st)
	if !ok {
		return nil
	}
	if r := st.Sequence; r != nil && r.Revision == revision && !r.Done() {
		w.seq = r
		return r
	}
	return nil
}

// runState is st, or the state read now when st is nil.
func (w *worker) runState(ctx context.Context, st *state.EnvState) (*state.EnvState, bool) {
	if st != nil {
		return st, true
	}
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "reading the sequence state", "environment", w.env)
		return nil, false
	}
	return st, true
}

// newRun is a run to begin: prop's, with the tasks of its sequence, kept
// in the state at once when save (a person approves it) or with the
// deployment's first write (an auto-approved plan).
type newRun struct {
	prop  approval.Proposal
	tasks []promote.Task
	save  bool
}

// beginRun starts the run of prop (or continues the one kept for its
// revision), announcing its start and, when a person approves, the
// approval task waiting. st is the pass's state, kept in step by the pass
// (nil: read it). With save false a new run is only kept in memory:
// an auto-approved plan begins its deployment at once, and that write keeps
// the run (one state write fewer before the first patch).
func (w *worker) beginRun(ctx context.Context, p *pass, nr newRun) {
	st, envM, prop, tasks, save := p.st, p.envM, nr.prop, nr.tasks, nr.save
	w.versions = versions(envM)
	if r := w.loadRun(ctx, st, prop.Revision); r != nil {
		if r.PlanHash != prop.Plan.PlanHash {
			r.PlanHash = prop.Plan.PlanHash
			w.saveRun(ctx)
		}
		return
	}
	w.abortRun(ctx, st, "replaced by revision "+short(prop.Revision))
	w.seq = sequence.New(w.env, prop.Revision, prop.Plan.PlanHash, tasks, w.now().UTC())
	if save {
		w.saveRun(ctx)
	}
	w.emit(ctx, -1, sequence.KindStarted, ending{})
	if i := w.seq.PreApproval(); i == 0 {
		w.begin(ctx, i)
	}
}

// abortRun ends a run that is not over without running the rest: its plan
// was superseded, or nothing is left to apply. st is the pass's state (nil:
// read it); the run ended is st's (w.seq is st.Sequence then), so st stays
// in step.
func (w *worker) abortRun(ctx context.Context, st *state.EnvState, why string) {
	st, ok := w.runState(ctx, st)
	if !ok {
		return
	}
	r := st.Sequence
	if r == nil || r.Done() || (st.InFlight != nil && st.InFlight.Revision == r.Revision) {
		return
	}
	w.seq = r
	w.finishRun(ctx, sequence.StatusAborted, promote.ResultFail, "aborted: "+why)
}

// approved finishes the approval task (when the run has one) and starts
// the deployment, writing the run and f (the apply in flight; nil: the
// record there stays, a resumed apply's) in one state write before
// announcing either step: the apply has one write to wait for
// before its first patch, not three. An error is that write's; nothing was
// announced then.
func (w *worker) approved(ctx context.Context, envM *manifest.Environment, j *applyJob, f *approval.InFlight) error {
	prop, approver := j.prop, j.approver
	r := w.loadRun(ctx, nil, prop.Revision)
	if r == nil {
		// Proposed before this reconciler ran sequences, or its state was lost.
		tasks := []promote.Task{{Name: promote.TaskDeployment}}
		if !approval.IsAuto(approver) {
			tasks = withApproval(tasks, true)
		}
		w.beginRun(ctx, &pass{envM: envM}, newRun{prop: prop, tasks: tasks, save: true})
		r = w.seq
	}
	w.versions = versions(envM)
	before := w.runCopy()
	r.Approver = approver
	var announce []func(context.Context)
	if i := r.PreApproval(); i >= 0 && r.Tasks[i].Status != sequence.StatusFinished {
		announce = append(announce, w.finishTask(i, sequence.Result{Result: promote.ResultPass, Message: "approved by " + approver}))
	}
	if i := r.Index(promote.TaskDeployment); i >= 0 {
		announce = append(announce, w.beginTask(i))
	}
	run := w.runCopy()
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		if f != nil {
			st.InFlight = f
		}
		st.Sequence, st.Phase = run, status.PhaseApplying
	}); err != nil {
		*r = *before // not kept, not announced: the next attempt does it again
		return err
	}
	for _, a := range announce {
		a(ctx)
	}
	return nil
}

// rejectedRun finishes the approval task and the run with fail.
func (w *worker) rejectedRun(ctx context.Context, prop approval.Proposal, who, reason string) {
	r := w.loadRun(ctx, nil, prop.Revision)
	if r == nil {
		return
	}
	r.Approver = who
	msg := "rejected by " + who
	if reason != "" {
		msg += ": " + reason
	}
	if i := r.PreApproval(); i >= 0 {
		w.finish(ctx, i, sequence.Result{Result: promote.ResultFail, Message: msg})
	}
	w.finishRun(ctx, sequence.StatusFinished, promote.ResultFail, msg)
}

// deployed finishes the deployment task with out's result and, when it
// passed, runs the tasks after it. It returns the outcome to record and
// report: failed when a task failed, interrupted when ctx ended during one
// (the next leader runs it again), and the sequence's result in Sequence;
// or, with waiting true, nothing to record yet: the run waits for its
// release approval (release.go).
func (w *worker) deployed(ctx context.Context, prop approval.Proposal, res *reconcile.Result, out approval.Outcome) (approval.Outcome, bool) {
	r := w.loadRun(ctx, nil, prop.Revision)
	if r == nil || out.Result == approval.ResultInterrupted {
		return out, false
	}
	if i := r.Index(promote.TaskDeployment); i >= 0 && r.Tasks[i].Status != sequence.StatusFinished {
		result := promote.ResultPass
		if out.Result != approval.ResultSucceeded {
			result = promote.ResultFail
		}
		// Deployed: the tasks after the deployment run (Verifying).
		announce := w.finishTask(i, sequence.Result{Result: result, Message: out.Message})
		phase := status.Phase("")
		if result == promote.ResultPass {
			phase = status.PhaseVerifying
		}
		w.saveRunIn(ctx, phase)
		announce(ctx)
	}
	if out.Result != approval.ResultSucceeded {
		w.finishRun(ctx, sequence.EventErrored, promote.ResultFail, out.Message)
		out.Sequence = promote.ResultFail
		return out, false
	}
	return w.runRest(ctx, prop, res, out)
}

// runRest runs the tasks of the run after the deployment, in order, up to
// the end or to the release approval (waiting true: nothing to record yet).
func (w *worker) runRest(ctx context.Context, prop approval.Proposal, res *reconcile.Result, out approval.Outcome) (approval.Outcome, bool) {
	r := w.seq
	for i := r.Next(); i < len(r.Tasks); i = r.Next() {
		t := r.Tasks[i]
		if r.Outcome() == promote.ResultFail {
			break // a failed task ends the sequence
		}
		if t.Name == promote.TaskApproval {
			// After the deployment: an approval before it finished
			// when the plan was approved.
			w.awaitRelease(ctx, prop, i)
			return out, true
		}
		w.begin(ctx, i)
		if t.Name == promote.TaskRelease {
			w.finish(ctx, i, sequence.Result{Result: promote.ResultPass, Message: "released"})
			continue
		}
		result, err := w.runTask(ctx, prop, res, i)
		if err != nil {
			out.Result = approval.ResultInterrupted
			out.Message = fmt.Sprintf("shut down during the %s task; the next leader runs it again", t.Name)
			return out, false
		}
		w.finish(ctx, i, result)
	}
	result := r.Outcome()
	msg := ""
	if result != promote.ResultPass {
		for _, t := range r.Tasks {
			if t.Result == result {
				msg = fmt.Sprintf("task %s finished with %s: %s", t.Name, t.Result, t.Message)
				break
			}
		}
	}
	w.finishRun(ctx, sequence.StatusFinished, result, msg)
	out.Sequence = result
	if result == promote.ResultFail {
		out.Result, out.Message = approval.ResultFailed, msg
	} else if msg != "" && out.Message == "" {
		out.Message = msg
	}
	out.Finished = w.now().UTC()
	return out, false
}

// runTask runs the task at i with its Runner. An error is a shutdown.
func (w *worker) runTask(ctx context.Context, prop approval.Proposal, res *reconcile.Result, i int) (sequence.Result, error) {
	r := w.seq
	t := r.Tasks[i]
	run, ok := w.tasks[t.Name]
	if !ok { // checked when the run began; the reconciler changed since
		return sequence.Result{Result: promote.ResultFail, Message: fmt.Sprintf("this reconciler has no runner for task %q (it had when the run began)", t.Name)}, nil
	}
	req := sequence.Request{Environment: w.env, Stage: r.Stage, Revision: prop.Revision, Versions: w.versions, Applied: res,
		Task: promote.Task{Name: t.Name, Properties: t.Properties, Index: i}, Data: r.Spaces(i - 1)}
	got, err := run(ctx, req)
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

// continueRun makes p's job the run the previous leader left in flight
// after its deployment (or a release approval decided), on an environment
// in sync at p's snapshot: the steps from verify on run what is left of its
// tasks and record, report and, when a task failed and the environment says
// so, roll it back exactly as after an apply. It reports whether there was
// one. The run may be of a revision older than the snapshot: the snapshot
// then changes nothing here (the environment is in sync at it), and the run
// is still the deployed one's.
func (w *worker) continueRun(p *pass) bool {
	st := p.st
	f, r := st.InFlight, st.Sequence
	if st.Phase != status.PhaseVerifying || f == nil || r == nil || r.Done() || f.Revision != r.Revision {
		return false
	}
	i := r.Index(promote.TaskDeployment)
	if i < 0 || r.Tasks[i].Status != sequence.StatusFinished || r.Tasks[i].Result != promote.ResultPass {
		return false
	}
	var changes []reconcile.Change
	if err := json.Unmarshal(f.Changes, &changes); err != nil {
		w.log.Error(err, "decoding the changes of the apply in flight", "environment", w.env)
	}
	w.seq, w.versions = r, versions(p.envM)
	plan := &reconcile.Plan{Environment: w.env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	prop := approval.Proposal{Environment: w.env, Revision: f.Revision, RevisionTime: p.snap.Time, Plan: plan}
	w.log.Info("continuing the sequence after the deployment", "environment", w.env, "revision", short(f.Revision), "task", r.Tasks[r.Next()%len(r.Tasks)].Name)
	p.job = &applyJob{prop: prop, continued: true,
		out: approval.Outcome{Result: approval.ResultSucceeded, Approver: f.Approver, Approvers: f.Approvers, Started: f.Started}}
	return true
}

// begin triggers and starts the run's task i: one state write, two events.
func (w *worker) begin(ctx context.Context, i int) {
	announce := w.beginTask(i)
	w.saveRun(ctx)
	announce(ctx)
}

// beginTask marks the run's task i started and returns what announces it.
func (w *worker) beginTask(i int) func(context.Context) {
	t := &w.seq.Tasks[i]
	t.Status, t.Started = sequence.StatusStarted, w.now().UTC()
	t.Finished, t.Result, t.Message, t.Outputs = time.Time{}, "", "", nil
	return func(ctx context.Context) {
		w.emit(ctx, i, sequence.KindTriggered, ending{})
		w.emit(ctx, i, sequence.KindStarted, ending{})
	}
}

// finish ends the run's task i with res (result, message and outputs),
// keeps it and announces it.
func (w *worker) finish(ctx context.Context, i int, res sequence.Result) {
	announce := w.finishTask(i, res)
	w.saveRun(ctx)
	announce(ctx)
}

// finishTask ends the run's task i and returns what announces it.
func (w *worker) finishTask(i int, res sequence.Result) func(context.Context) {
	t := &w.seq.Tasks[i]
	t.Status, t.Finished, t.Result, t.Message, t.Outputs = sequence.StatusFinished, w.now().UTC(), res.Result, res.Message, res.Outputs
	status := sequence.EventSucceeded
	if res.Result == promote.ResultFail && t.Name == promote.TaskDeployment {
		status = sequence.EventErrored // it could not deploy; a failed check succeeded in finding a fault
	}
	return func(ctx context.Context) {
		w.emit(ctx, i, sequence.KindFinished, ending{res.Result, status, res.Message})
	}
}

// finishRun ends the run with status (finished or aborted) and result.
func (w *worker) finishRun(ctx context.Context, status, result, msg string) {
	r := w.seq
	eventStatus := sequence.EventSucceeded
	switch status {
	case sequence.StatusAborted:
		eventStatus = sequence.EventAborted
	case sequence.EventErrored:
		eventStatus, status = sequence.EventErrored, sequence.StatusFinished
	}
	r.Status, r.Result, r.Message, r.Finished = status, result, msg, w.now().UTC()
	w.saveRun(ctx)
	w.emit(ctx, -1, sequence.KindFinished, ending{result, eventStatus, msg})
}

// saveRun keeps the run in the state; a failure is logged and counted.
func (w *worker) saveRun(ctx context.Context) { w.saveRunIn(ctx, "") }

// saveRunIn keeps the run in the state, moving the environment to phase
// (unless ""), in one write; a failure is logged and counted.
func (w *worker) saveRunIn(ctx context.Context, phase status.Phase) {
	// Kept during a shutdown too: the next leader continues from here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r := w.runCopy()
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		st.Sequence = r
		if phase != "" {
			st.Phase = phase
		}
	}); err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording the sequence state", "environment", w.env, "revision", short(r.Revision))
		return
	}
	if !r.Done() && r.Next() < len(r.Tasks) {
		// Verifying, and each task's progress; a run with nothing left to
		// run is told as its pass ends.
		w.rec.moved()
	}
}

// runCopy is a copy of the run to keep in the state.
func (w *worker) runCopy() *sequence.State {
	r := *w.seq
	r.Tasks = slices.Clone(w.seq.Tasks)
	return &r
}

// ending is how a run or task ended, as its finished event says (empty for
// the other events).
type ending struct{ result, status, msg string }

// emit announces a step of the run: the run itself (task -1) or task i.
func (w *worker) emit(ctx context.Context, i int, kind string, end ending) {
	result, status, msg := end.result, end.status, end.msg
	if w.listener == nil {
		return
	}
	r := w.seq
	last := i
	if i < 0 {
		last = len(r.Tasks) - 1
	}
	e := sequence.Event{Environment: w.env, Kind: kind, Time: w.now().UTC(), Data: sequence.Data{
		Stage: r.Stage, Sequence: r.Sequence, Environment: w.env, Revision: r.Revision, PlanHash: r.PlanHash,
		Result: result, Status: status, Message: msg, Approver: r.Approver, Versions: w.versions, Tasks: r.Spaces(last)}}
	if i < 0 {
		e.Name = r.Stage + "." + r.Sequence + "." + kind
	} else {
		e.Task = r.Tasks[i].Name
		e.Name = e.Task + "." + kind
	}
	w.listener.SequenceEvent(ctx, e)
}

func supersededWhy(by string) string {
	if by == "" {
		return "nothing is left to apply"
	}
	return "superseded by revision " + short(by)
}
