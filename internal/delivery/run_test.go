package delivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// memStore is one environment's state in memory, counting writes; fail
// makes every call fail.
type memStore struct {
	st     state.EnvState
	writes int
	fail   error
}

func (m *memStore) Load(context.Context, string) (*state.EnvState, error) {
	if m.fail != nil {
		return nil, m.fail
	}
	cp := m.st
	return &cp, nil
}

func (m *memStore) Update(_ context.Context, _ string, mutate func(*state.EnvState)) error {
	if m.fail != nil {
		return m.fail
	}
	mutate(&m.st)
	m.writes++
	return nil
}

// events records the names of the events heard.
type events []string

func (e *events) SequenceEvent(_ context.Context, ev sequence.Event) { *e = append(*e, ev.Name) }

func newRun(t *testing.T, tasks map[string]sequence.Runner, pl *promote.Pipeline) (*Run, *memStore, *events) {
	t.Helper()
	store, evs := &memStore{}, &events{}
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	c := Config{Env: "prod", Store: store, Now: func() time.Time { return now }, Log: logr.Discard(), Tasks: tasks, Listener: evs}
	if pl != nil {
		c.Pipeline = func(gitsource.Snapshot) (*promote.Pipeline, error) { return pl, nil }
	}
	return New(c), store, evs
}

func proposal(rev string) approval.Proposal {
	return approval.Proposal{Environment: "prod", Revision: rev, Plan: &reconcile.Plan{Environment: "prod", Revision: rev, PlanHash: "sha256:" + rev}}
}

func TestWithApproval(t *testing.T) {
	dep, appr, test := promote.Task{Name: promote.TaskDeployment}, promote.Task{Name: promote.TaskApproval}, promote.Task{Name: promote.TaskTest}
	for _, tc := range []struct {
		name   string
		tasks  []promote.Task
		person bool
		want   []string
	}{
		{"auto keeps the sequence", []promote.Task{dep, test}, false, []string{"deployment", "test"}},
		{"a person approves first", []promote.Task{dep, test}, true, []string{"approval", "deployment", "test"}},
		{"an approval before the deployment stays the one", []promote.Task{appr, dep}, true, []string{"approval", "deployment"}},
		{"an approval after the deployment is the release's", []promote.Task{dep, appr}, true, []string{"approval", "deployment", "approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tk := range WithApproval(tc.tasks, tc.person) {
				got = append(got, tk.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WithApproval (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTasks(t *testing.T) {
	stage := func(tasks ...promote.Task) *promote.Pipeline {
		return &promote.Pipeline{File: "pipeline.yaml", Stages: []promote.Stage{{Name: "prod", Sequence: tasks}}}
	}
	pass := func(context.Context, sequence.Request) (sequence.Result, error) {
		return sequence.Result{Result: promote.ResultPass}, nil
	}
	for _, tc := range []struct {
		name    string
		pl      *promote.Pipeline
		runners map[string]sequence.Runner
		check   func(promote.Task) error
		want    []string
		wantErr string
	}{
		{name: "no pipeline: the default sequence", want: []string{"deployment"}},
		{name: "another stage only: the default sequence", pl: &promote.Pipeline{Stages: []promote.Stage{{Name: "dev"}}}, want: []string{"deployment"}},
		{name: "the stage's sequence", pl: stage(promote.Task{Name: "deployment"}, promote.Task{Name: "test", Line: 4, Column: 9, Index: 1}),
			runners: map[string]sequence.Runner{"test": pass}, want: []string{"deployment", "test"}},
		{name: "no runner for a task", pl: stage(promote.Task{Name: "deployment"}, promote.Task{Name: "test", Line: 4, Column: 9, Index: 1}),
			wantErr: `pipeline.yaml:4:9: stages[0].sequence[1]: this reconciler has no runner for task "test" (it runs: approval, deployment, release;`},
		{name: "properties refused", pl: stage(promote.Task{Name: "evaluation", Line: 2, Column: 3}),
			runners: map[string]sequence.Runner{"evaluation": pass}, check: func(promote.Task) error { return errors.New("no query") },
			wantErr: "pipeline.yaml:2:3: stages[0].sequence[0].properties: no query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, _ := newRun(t, tc.runners, tc.pl)
			r.CheckTask = tc.check
			got, err := r.Tasks(gitsource.Snapshot{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Tasks: error %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tk := range got {
				names = append(names, tk.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("Tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunToTheEnd: a run approved by a person, deployed and tested, kept in
// the state at every step and announced step by step; a task's result
// outside pass, warning and fail fails it.
func TestRunToTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		result     string
		wantResult string
		wantSeq    string
	}{
		{"test passes", promote.ResultPass, approval.ResultSucceeded, promote.ResultPass},
		{"test fails", promote.ResultFail, approval.ResultFailed, promote.ResultFail},
		{"test answers nonsense", "maybe", approval.ResultFailed, promote.ResultFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req sequence.Request
			test := func(_ context.Context, r sequence.Request) (sequence.Result, error) {
				req = r
				return sequence.Result{Result: tc.result, Message: "checked"}, nil
			}
			r, store, evs := newRun(t, map[string]sequence.Runner{"test": test}, nil)
			prop := proposal("r1")
			envM := &manifest.Environment{Services: []manifest.Service{{Name: "api", Version: "1.2.0"}}}
			tasks := WithApproval([]promote.Task{{Name: "deployment"}, {Name: "test"}}, true)
			ctx := context.Background()
			r.Begin(ctx, Start{Env: envM, Prop: prop, Tasks: tasks, Save: true})
			if store.st.Sequence == nil || store.st.Sequence.Tasks[0].Status != sequence.StatusStarted {
				t.Fatalf("after Begin the state holds %+v; want the run with its approval started", store.st.Sequence)
			}
			f := &approval.InFlight{Revision: "r1", PlanHash: prop.Plan.PlanHash}
			if err := r.Approved(ctx, Approval{Env: envM, Prop: prop, Approver: "github:alice", InFlight: f}); err != nil {
				t.Fatal(err)
			}
			if store.st.Phase != status.PhaseApplying || store.st.InFlight != f {
				t.Fatalf("after Approved: phase %q, in flight %v; want applying with the record", store.st.Phase, store.st.InFlight)
			}
			out, release := r.Deployed(ctx, prop, &reconcile.Result{}, approval.Outcome{Result: approval.ResultSucceeded})
			if release != -1 || out.Result != tc.wantResult || out.Sequence != tc.wantSeq {
				t.Fatalf("Deployed = %+v, %d; want result %q, sequence %q, no release approval", out, release, tc.wantResult, tc.wantSeq)
			}
			if diff := cmp.Diff(map[string]string{"api": "1.2.0"}, req.Versions); diff != "" {
				t.Errorf("the test task's versions (-want +got):\n%s", diff)
			}
			if s := store.st.Sequence; s == nil || !s.Done() || s.Result != tc.wantSeq {
				t.Errorf("the run kept: %+v; want it finished with %q", s, tc.wantSeq)
			}
			want := events{"prod.delivery.started", "approval.triggered", "approval.started", "approval.finished",
				"deployment.triggered", "deployment.started", "deployment.finished", "test.triggered", "test.started", "test.finished",
				"prod.delivery.finished"}
			if diff := cmp.Diff(want, *evs); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRelease: a run with an approval after its deployment stops there;
// the pending release is written with the run, and deciding it finishes
// the task (approved: ReleasedBy names the approvers) or fails the run.
func TestRelease(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "rejected"}[approve], func(t *testing.T) {
			r, store, _ := newRun(t, nil, nil)
			ctx := context.Background()
			prop := proposal("r1")
			tasks := []promote.Task{{Name: "deployment"}, {Name: "approval"}, {Name: "release"}}
			r.Begin(ctx, Start{Prop: prop, Tasks: tasks})
			if err := r.Approved(ctx, Approval{Prop: prop, Approver: approval.AutoApprover}); err != nil {
				t.Fatal(err)
			}
			out, release := r.Deployed(ctx, prop, nil, approval.Outcome{Result: approval.ResultSucceeded})
			if release != 1 {
				t.Fatalf("Deployed = %+v, %d; want to wait at task 1", out, release)
			}
			r.BeginTask(release)(ctx)
			p, err := r.WriteRelease(ctx, prop, 1)
			if err != nil {
				t.Fatal(err)
			}
			if store.st.Phase != status.PhaseAwaitingRelease || store.st.Pending == nil || !store.st.Pending.Release {
				t.Fatalf("after WriteRelease: phase %q, pending %+v; want the pending release", store.st.Phase, store.st.Pending)
			}
			p.Approvals = []approval.Approval{{Approver: "github:bob"}}
			if err := r.Decide(ctx, Release{Pending: p, Approve: approve, Who: "github:bob", Reason: "not today"}); err != nil {
				t.Fatal(err)
			}
			if store.st.Pending != nil || store.st.Phase != status.PhaseVerifying {
				t.Errorf("after Decide: pending %+v, phase %q; want none, verifying", store.st.Pending, store.st.Phase)
			}
			if err := r.Decide(ctx, Release{Pending: p, Approve: approve, Who: "github:bob"}); !errors.As(err, new(*approval.NotPendingError)) {
				t.Errorf("deciding again: %v; want a NotPendingError", err)
			}
			out, _ = r.Rest(ctx, prop, nil, approval.Outcome{Result: approval.ResultSucceeded})
			msg, rejected := ReleaseRejected(r.State(), "r1")
			if approve {
				if got := ReleasedBy(r.State(), "r1"); got != "github:bob" || rejected || out.Result != approval.ResultSucceeded {
					t.Errorf("approved: released by %q, rejected %v, outcome %+v; want github:bob, false, succeeded", got, rejected, out)
				}
				return
			}
			if !rejected || msg != "rejected by github:bob: not today" || out.Result != approval.ResultFailed || ReleasedBy(r.State(), "r1") != "" {
				t.Errorf("rejected: %q %v, outcome %+v; want the rejection and a failed outcome", msg, rejected, out)
			}
		})
	}
}

// TestAbort: a run superseded before its apply ends aborted, saying why; a
// run whose apply is in flight is left to it.
func TestAbort(t *testing.T) {
	r, store, _ := newRun(t, nil, nil)
	ctx := context.Background()
	r.Begin(ctx, Start{Prop: proposal("r1"), Tasks: WithApproval([]promote.Task{{Name: "deployment"}}, true), Save: true})
	st, _ := store.Load(ctx, "prod")
	st.InFlight = &approval.InFlight{Revision: "r1"}
	r.Abort(ctx, st, SupersededWhy("r2"))
	if store.st.Sequence.Done() {
		t.Fatal("a run whose apply is in flight was aborted")
	}
	r.Abort(ctx, nil, SupersededWhy("r2"))
	if s := store.st.Sequence; s.Status != sequence.StatusAborted || s.Message != "aborted: superseded by revision r2" {
		t.Errorf("aborted run: %s %q; want aborted, saying by which revision", s.Status, s.Message)
	}
}

// TestStateWriteFails: a write that fails is counted through Failed and
// leaves the run unannounced, to be done again.
func TestStateWriteFails(t *testing.T) {
	r, store, evs := newRun(t, nil, nil)
	failed := 0
	r.Failed = func() { failed++ }
	ctx := context.Background()
	prop := proposal("r1")
	r.Begin(ctx, Start{Prop: prop, Tasks: []promote.Task{{Name: "deployment"}}})
	store.fail = errors.New("etcdserver: request timed out")
	n := len(*evs)
	if err := r.Approved(ctx, Approval{Prop: prop, Approver: approval.AutoApprover}); err == nil {
		t.Fatal("Approved: no error while the state cannot be written")
	}
	if len(*evs) != n || r.State().Tasks[0].Status == sequence.StatusStarted {
		t.Errorf("a run not kept was announced (%v) or changed (%+v)", (*evs)[n:], r.State().Tasks[0])
	}
	r.SaveIn(ctx, status.PhaseVerifying)
	if failed != 1 {
		t.Errorf("Failed heard %d failures; want 1", failed)
	}
}
