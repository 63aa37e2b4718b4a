package waiter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

const (
	r1 = "1111111111111111111111111111111111111111"
	r2 = "2222222222222222222222222222222222222222"
)

// view is an environment observing rev with web at version, its state st.
func view(rev, version, st string, mut ...func(*status.Environment)) *status.Environment {
	v := &status.Environment{Name: "devel", Observation: status.Observation{Revision: rev,
		Services: []status.Service{{Name: "web", Version: version, Targets: []status.ServiceTarget{{Target: "a", State: st}}}}}}
	for _, m := range mut {
		m(v)
	}
	return v
}

func last(id int64, rev, result string) func(*status.Environment) {
	return func(v *status.Environment) {
		v.History = append([]approval.Entry{{ID: id, Revision: rev, Result: result}}, v.History...)
		v.LastResult = &v.History[0]
	}
}

// TestJudge follows waits read after read: each step's verdict (done,
// outcome) is what `reconciler wait` exits with.
func TestJudge(t *testing.T) {
	type step struct {
		v       *status.Environment
		done    bool
		outcome string
	}
	pending := func(v *status.Environment) { v.Pending = &approval.Pending{Revision: v.Revision, PlanHash: "sha256:p"} }
	tests := []struct {
		name   string
		target Target
		steps  []step
	}{{
		name:   "the revision observed now, deployed",
		target: Target{},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateOutOfSync, func(v *status.Environment) { v.InFlight = &approval.InFlight{Revision: r1} })},
			{v: view(r1, "1.0.0", status.StateInSync, last(1, r1, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		name:   "a revision by prefix, not yet observed, then deployed",
		target: Target{Revision: r2[:7]},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateInSync)},
			{v: view(r2, "2.0.0", status.StateOutOfSync, pending)},
			{v: view(r2, "2.0.0", status.StateInSync, last(2, r2, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		name:   "rejected",
		target: Target{Revision: r1},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateOutOfSync, pending)},
			{v: view(r1, "1.0.0", status.StateOutOfSync, last(3, r1, approval.ResultRejected)), done: true, outcome: Rejected},
		},
	}, {
		name:   "failed",
		target: Target{Revision: r1},
		steps:  []step{{v: view(r1, "1.0.0", status.StateOutOfSync, last(3, r1, approval.ResultFailed)), done: true, outcome: Failed}},
	}, {
		name:   "verification failed",
		target: Target{Revision: r1},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateInSync, func(v *status.Environment) {
				v.Sequence = &sequence.State{Revision: r1, Status: sequence.StatusStarted, Tasks: []sequence.TaskState{{Name: "test", Status: sequence.StatusStarted}}}
			})},
			{v: view(r1, "1.0.0", status.StateInSync, func(v *status.Environment) {
				v.Sequence = &sequence.State{Revision: r1, Status: sequence.StatusFinished, Result: "fail", Message: "smoke test: 500"}
			}), done: true, outcome: Failed},
		},
	}, {
		name:   "rolled back",
		target: Target{Revision: r1},
		steps:  []step{{v: view(r1, "1.0.0", status.StateInSync, last(4, r1, approval.ResultRolledBack)), done: true, outcome: RolledBack}},
	}, {
		name:   "superseded before it was deployed",
		target: Target{Revision: r1},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateOutOfSync, pending)},
			{v: view(r2, "2.0.0", status.StateOutOfSync, pending), done: true, outcome: Superseded},
		},
	}, {
		name:   "deployed, then followed by a newer revision",
		target: Target{Revision: r1},
		steps:  []step{{v: view(r2, "2.0.0", status.StateOutOfSync, pending, last(5, r1, approval.ResultSucceeded)), done: true, outcome: Deployed}},
	}, {
		name:   "pending at the revision while a newer one changing nothing is observed",
		target: Target{Revision: r1},
		steps: []step{
			{v: view(r2, "1.0.0", status.StateOutOfSync, func(v *status.Environment) { v.Pending = &approval.Pending{Revision: r1} })},
			{v: view(r2, "1.0.0", status.StateInSync, last(6, r1, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		// The apply is recorded (and its in-flight record cleared) in one write; the environment
		// observes the revision when the pass ends, a write later.
		name:   "failed, recorded before the revision is observed",
		target: Target{Revision: r2},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateInSync, func(v *status.Environment) { v.InFlight = &approval.InFlight{Revision: r2} })},
			{v: view(r1, "1.0.0", status.StateInSync, last(9, r2, approval.ResultFailed)), done: true, outcome: Failed},
		},
	}, {
		name:   "succeeded, recorded before the revision is observed",
		target: Target{Revision: r2},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateInSync, func(v *status.Environment) { v.InFlight = &approval.InFlight{Revision: r2} })},
			{v: view(r1, "1.0.0", status.StateInSync, last(10, r2, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		name:   "a service's version",
		target: Target{Service: "web", Version: "2.0.0"},
		steps: []step{
			{v: view(r1, "1.0.0", status.StateInSync)},
			{v: view(r2, "2.0.0", status.StateOutOfSync, pending)},
			{v: view(r2, "2.0.0", status.StateInSync, last(7, r2, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		name:   "a service's tag, in a manifest without versions",
		target: Target{Service: "web", Version: "2.0.0"},
		steps: []step{
			{v: view(r1, "", status.StateInSync, func(v *status.Environment) { v.Services[0].Desired = []manifest.Container{{DockerTag: "1.0.0"}} })},
			{v: view(r2, "", status.StateInSync, func(v *status.Environment) { v.Services[0].Desired = []manifest.Container{{DockerTag: "2.0.0"}} }, last(8, r2, approval.ResultSucceeded)), done: true, outcome: Deployed},
		},
	}, {
		name:   "a service's version superseded",
		target: Target{Service: "web", Version: "2.0.0"},
		steps: []step{
			{v: view(r1, "2.0.0", status.StateOutOfSync, pending)},
			{v: view(r2, "3.0.0", status.StateOutOfSync, pending), done: true, outcome: Superseded},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := New(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				got := j.Judge(s.v)
				if diff := cmp.Diff([]any{s.done, s.outcome}, []any{got.Done, got.Outcome}); diff != "" || got.Message == "" {
					t.Fatalf("step %d: %+v (-want +got done, outcome):\n%s", i, got, diff)
				}
			}
			// The same reads as GET /api/v1/environments/{env} serves them: the history apart, the
			// last result kept.
			a, err := New(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				v := *s.v
				v.History = nil
				got := a.Judge(&v)
				if diff := cmp.Diff([]any{s.done, s.outcome}, []any{got.Done, got.Outcome}); diff != "" || got.Message == "" {
					t.Fatalf("as the API serves it, step %d: %+v (-want +got done, outcome):\n%s", i, got, diff)
				}
			}
			if tt.target.Service != "" {
				return // the Environment object carries no versions (TestObject)
			}
			// The same reads as the Environment object shows them.
			o, err := New(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				st := envresource.StatusOf(s.v, "", envresource.Object{Generation: 1}, time.Time{})
				got, err := o.Object(&st)
				if diff := cmp.Diff([]any{s.done, s.outcome}, []any{got.Done, got.Outcome}); diff != "" || got.Message == "" || err != nil {
					t.Fatalf("Object, step %d: %+v, %v (-want +got done, outcome):\n%s", i, got, err, diff)
				}
			}
		})
	}
}

// TestNewRefuses: a target is one revision (a commit hash) or one service
// at a version.
func TestNewRefuses(t *testing.T) {
	for _, tt := range []Target{
		{Revision: "abc"}, {Revision: "not-a-commit"}, {Revision: r1 + r1}, {Revision: r1, Service: "web", Version: "1"}, {Service: "web"},
	} {
		if _, err := New(tt); err == nil {
			t.Errorf("New(%+v) accepted", tt)
		}
	}
}

// TestObject: what only the Environment object's reader meets: a status not
// written yet, a deploy known by the last deploy alone, a verification
// under way then passed, and a wait for a service's version, refused.
func TestObject(t *testing.T) {
	type step struct {
		st      envresource.Status
		done    bool
		outcome string
	}
	of := func(v *status.Environment, phase status.Phase) envresource.Status {
		return envresource.StatusOf(v, phase, envresource.Object{Generation: 1}, time.Time{})
	}
	verifying := func(v *status.Environment) {
		v.Sequence = &sequence.State{Revision: r1, Status: sequence.StatusStarted, Tasks: []sequence.TaskState{{Name: "test", Status: sequence.StatusStarted}}}
	}
	passed := func(v *status.Environment) {
		v.Sequence = &sequence.State{Revision: r1, Status: sequence.StatusFinished, Result: "pass", Tasks: []sequence.TaskState{{Name: "test", Status: sequence.StatusFinished}}}
	}
	tests := []struct {
		name   string
		target Target
		steps  []step
	}{{
		name:   "no status written yet, then the revision observed and deployed",
		target: Target{},
		steps: []step{
			{st: envresource.Status{}},
			{st: of(view(r1, "1.0.0", status.StateOutOfSync, func(v *status.Environment) { v.InFlight = &approval.InFlight{Revision: r1} }), status.PhaseApplying)},
			{st: of(view(r1, "1.0.0", status.StateInSync, last(1, r1, approval.ResultSucceeded)), status.PhaseIdle), done: true, outcome: Deployed},
		},
	}, {
		name:   "applied, verifying, then verified",
		target: Target{Revision: r1[:7]},
		steps: []step{
			{st: of(view(r1, "1.0.0", status.StateInSync, last(1, r1, approval.ResultSucceeded), verifying), status.PhaseVerifying)},
			{st: of(view(r1, "1.0.0", status.StateInSync, last(1, r1, approval.ResultSucceeded), passed), status.PhaseIdle), done: true, outcome: Deployed},
		},
	}, {
		name:   "failed, known by the last deploy once a newer revision is observed",
		target: Target{Revision: r1},
		steps:  []step{{st: of(view(r2, "2.0.0", status.StateOutOfSync, last(2, r1, approval.ResultFailed)), status.PhaseIdle), done: true, outcome: Failed}},
	}, {
		name:   "a revision deployed before the last deploy is not known: still waiting",
		target: Target{Revision: r1},
		steps:  []step{{st: of(view(r2, "2.0.0", status.StateInSync, last(3, r2, approval.ResultSucceeded)), status.PhaseIdle)}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := New(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				got, err := j.Object(&s.st)
				if diff := cmp.Diff([]any{s.done, s.outcome}, []any{got.Done, got.Outcome}); diff != "" || got.Message == "" || err != nil {
					t.Fatalf("step %d: %+v, %v (-want +got done, outcome):\n%s", i, got, err, diff)
				}
			}
		})
	}
	t.Run("a service's version is refused", func(t *testing.T) {
		j, err := New(Target{Service: "web", Version: "2.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		st := of(view(r1, "2.0.0", status.StateInSync), status.PhaseIdle)
		if got, err := j.Object(&st); err == nil {
			t.Errorf("Object for a service's version: %+v, want an error", got)
		}
	})
}
