package sequence

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Statuses of a sequence run and of a task.
const (
	StatusTriggered = "triggered" // a task that is next, not begun
	StatusStarted   = "started"   // running
	StatusFinished  = "finished"  // over, with a result
	// StatusAborted ends a sequence that stopped before its end: its plan
	// was superseded by a newer revision's, or its environment needs nothing any more.
	StatusAborted = "aborted"
)

// State is one run of an environment's sequence for one revision, as kept
// in the daemon's state and shown in the environment status.
type State struct {
	Stage    string `json:"stage"`
	Sequence string `json:"sequence"`
	Revision string `json:"revision"`
	// PlanHash is the plan the run deploys.
	PlanHash string `json:"planHash"`
	// Status is started, finished or aborted; Result (pass, warning or
	// fail) is set once it is finished or aborted.
	Status   string      `json:"status"`
	Result   string      `json:"result,omitempty"`
	Message  string      `json:"message,omitempty"`
	Approver string      `json:"approver,omitempty"`
	Tasks    []TaskState `json:"tasks"`
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished,omitzero"`
}

// TaskState is one task of a run.
type TaskState struct {
	Name string `json:"name"`
	// Status is "" (not reached), triggered, started or finished.
	Status  string `json:"status,omitempty"`
	Result  string `json:"result,omitempty"`
	Message string `json:"message,omitempty"`
	// Properties are the task's properties from pipeline.yaml; Outputs
	// what its implementation reported.
	Properties json.RawMessage `json:"properties,omitempty"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	Started    time.Time       `json:"started,omitzero"`
	Finished   time.Time       `json:"finished,omitzero"`
}

// Delivery is what a run delivers: the stage (the environment) at a
// revision, with the plan applied there.
type Delivery struct {
	Stage, Revision, PlanHash string
}

// New starts the state of a run of tasks after d at now.
func New(d Delivery, tasks []promote.Task, now time.Time) *State {
	s := &State{Stage: d.Stage, Sequence: promote.SequenceName, Revision: d.Revision, PlanHash: d.PlanHash, Status: StatusStarted, Started: now}
	for _, t := range tasks {
		s.Tasks = append(s.Tasks, TaskState{Name: t.Name, Properties: t.Properties})
	}
	return s
}

// Done reports whether the run is over (finished or aborted).
func (s *State) Done() bool { return s.Status == StatusFinished || s.Status == StatusAborted }

// Index returns the index of the first task called name, or -1.
func (s *State) Index(name string) int {
	for i, t := range s.Tasks {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// PreApproval returns the index of the approval task before the
// deployment (it approves the plan), or -1.
func (s *State) PreApproval() int { return s.approval(false) }

// ReleaseApproval returns the index of the approval task after the
// deployment (it releases the deployed revision), or -1.
func (s *State) ReleaseApproval() int { return s.approval(true) }

func (s *State) approval(after bool) int {
	dep := s.Index(promote.TaskDeployment)
	for i, t := range s.Tasks {
		if t.Name == promote.TaskApproval && (dep >= 0 && i > dep) == after {
			return i
		}
	}
	return -1
}

// AwaitingRelease reports whether the run waits for its release approval:
// the approval task after the deployment has started and not finished.
func (s *State) AwaitingRelease() bool {
	i := s.ReleaseApproval()
	return !s.Done() && i >= 0 && s.Tasks[i].Status == StatusStarted
}

// Next returns the index of the first task not finished, or len(Tasks).
func (s *State) Next() int {
	for i, t := range s.Tasks {
		if t.Status != StatusFinished {
			return i
		}
	}
	return len(s.Tasks)
}

// Outcome is the worst result of the finished tasks: pass, warning or fail.
func (s *State) Outcome() string {
	r := promote.ResultPass
	for _, t := range s.Tasks {
		r = Worst(r, t.Result)
	}
	return r
}

// Worst returns the worse of two results (fail > warning > pass; "" counts as pass).
func Worst(a, b string) string {
	rank := func(r string) int {
		switch r {
		case promote.ResultFail:
			return 2
		case promote.ResultWarning:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	if a == "" {
		return promote.ResultPass
	}
	return a
}

// Request is what a task's implementation is given.
type Request struct {
	Environment string
	Stage       string
	Revision    string
	// Task is the task as pipeline.yaml declares it (name, properties, index).
	Task promote.Task
	// Versions maps each service of the environment to its version (or,
	// without one, its first container's tag) at Revision.
	Versions map[string]string
	// Applied is the deployment's result: the plan and each workload's
	// outcome (nil when the run was continued by a new process).
	Applied *reconcile.Result
	// Data is the reserved space of every earlier task of the run, by task
	// name: its properties merged with its outputs.
	Data map[string]json.RawMessage
}

// Result is how a task ended.
type Result struct {
	// Result is pass, warning or fail.
	Result  string
	Message string
	// Outputs is a JSON object the task adds to its reserved space.
	Outputs json.RawMessage
}

// Runner runs one task kind to its end or until ctx ends; it reports a
// failure of what it checks as a Result with Result fail. It returns an
// error only when ctx ended: the task is then run again by the next
// process. Its own timeout is the implementation's business.
type Runner func(ctx context.Context, r Request) (Result, error)

// Listener hears every step of every run. Calls come from one worker per
// environment, in order; a Listener must return at once (queue, never send
// inline) and never fail the run.
type Listener interface {
	SequenceEvent(ctx context.Context, e Event)
}

// Listeners is a Listener that tells each of ls in turn (nil ones skipped).
func Listeners(ls ...Listener) Listener {
	var out listeners
	for _, l := range ls {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}

type listeners []Listener

func (ls listeners) SequenceEvent(ctx context.Context, e Event) {
	for _, l := range ls {
		l.SequenceEvent(ctx, e)
	}
}
