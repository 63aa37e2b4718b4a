package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// listener records every sequence event.
type listener struct {
	mu     sync.Mutex
	events []sequence.Event
}

func (l *listener) SequenceEvent(_ context.Context, e sequence.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// names lists the events heard, with the result of finished ones.
func (l *listener) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		n := e.Name
		if e.Kind == sequence.KindFinished {
			n += " " + e.Data.Result
		}
		out = append(out, n)
	}
	return out
}

func (l *listener) find(name string) (sequence.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Name == name {
			return e, true
		}
	}
	return sequence.Event{}, false
}

// runner is a test task whose result the test sets; block makes it wait
// until its context ends.
type runner struct {
	mu       sync.Mutex
	result   sequence.Result
	block    bool
	started  chan struct{}
	requests []sequence.Request
}

func (r *runner) run(ctx context.Context, req sequence.Request) (sequence.Result, error) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	block, res := r.block, r.result
	r.mu.Unlock()
	if r.started != nil {
		close(r.started)
		r.started = nil
	}
	if block {
		<-ctx.Done()
		return sequence.Result{}, ctx.Err()
	}
	return res, nil
}

const testPipeline = `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties: {kind: http, url: "http://web/healthz"}
      - release
`

func sequenceDaemon(t *testing.T, h *harness, opts ...Option) (*Daemon, *recordingGate, *listener) {
	t.Helper()
	return sequenceDaemonWith(t, h, nil, opts...)
}

// sequenceDaemonWith is sequenceDaemon with wopts added to the options of
// the daemon's parts' builder.
func sequenceDaemonWith(t *testing.T, h *harness, wopts []wire.Option, opts ...Option) (*Daemon, *recordingGate, *listener) {
	t.Helper()
	gate, l := &recordingGate{}, &listener{}
	base := []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0))}
	d, err := build(h.cfg, append(base, wopts...), append([]Option{WithGate(gate), WithSequenceListener(l)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d, gate, l
}

// TestSequencePasses: a skipConfirmation environment whose stage declares
// [deployment, test, release] deploys, runs the test task with its
// properties and the deployment's data, releases, and reports every step in
// order; the gate hears Completed once, after the whole sequence, with its
// result; the run is kept in the state and shown in the status.
func TestSequencePasses(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	test := &runner{result: sequence.Result{Result: promote.ResultPass, Message: "3 of 3 requests answered 200", Outputs: json.RawMessage(`{"requests":3}`)}}
	d, gate, l := sequenceDaemon(t, h, WithTask(promote.TaskTest, test.run))
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"devel.delivery.started",
		"deployment.triggered", "deployment.started", "deployment.finished pass",
		"test.triggered", "test.started", "test.finished pass",
		"release.triggered", "release.started", "release.finished pass",
		"devel.delivery.finished pass",
	}
	if diff := cmp.Diff(want, l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(test.requests) != 1 {
		t.Fatalf("test task ran %d times, want 1", len(test.requests))
	}
	req := test.requests[0]
	if got := string(req.Task.Properties); got != `{"kind":"http","url":"http://web/healthz"}` {
		t.Errorf("test task properties = %s", got)
	}
	if req.Versions["web"] != "1.0.0" || req.Applied == nil || req.Environment != "devel" || req.Stage != "devel" {
		t.Errorf("test request = %+v", req)
	}
	if _, ok := req.Data[promote.TaskDeployment]; !ok {
		t.Errorf("test request data lacks the deployment's space: %v", req.Data)
	}
	fin, _ := l.find("test.finished")
	var data map[string]any
	raw, err := json.Marshal(fin.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	wantSpace := map[string]any{"kind": "http", "url": "http://web/healthz", "requests": float64(3)}
	if diff := cmp.Diff(wantSpace, data["test"]); diff != "" {
		t.Errorf("test.finished data.test (-want +got):\n%s", diff)
	}
	if data["result"] != "pass" || data["status"] != "succeeded" || data["revision"] == "" {
		t.Errorf("test.finished data = %s", raw)
	}
	gate.mu.Lock()
	completed := gate.completed
	gate.mu.Unlock()
	if len(completed) != 1 || completed[0].Result != approval.ResultSucceeded || completed[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want one Completed succeeded with sequence pass", completed)
	}
	env, err := d.Environment(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if s := env.Sequence; s == nil || s.Status != sequence.StatusFinished || s.Result != promote.ResultPass || len(s.Tasks) != 3 || s.Tasks[1].Message != "3 of 3 requests answered 200" {
		t.Errorf("status sequence = %+v", env.Sequence)
	}
	if env.LastResult == nil || env.LastResult.Result != approval.ResultSucceeded {
		t.Errorf("last result = %+v", env.LastResult)
	}
}

// TestSequenceFailedTaskFailsTheDeploy: a test task that fails ends the
// sequence with fail before release, and the deploy is recorded and
// reported as failed with the task's message.
func TestSequenceFailedTaskFailsTheDeploy(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	test := &runner{result: sequence.Result{Result: promote.ResultFail, Message: "2 of 3 requests answered 503"}}
	d, gate, l := sequenceDaemon(t, h, WithTask(promote.TaskTest, test.run))
	if err := d.Once(ctx); err == nil || !strings.Contains(err.Error(), "2 of 3 requests answered 503") {
		t.Errorf("Once = %v, want the failed task's message", err)
	}
	want := []string{
		"devel.delivery.started",
		"deployment.triggered", "deployment.started", "deployment.finished pass",
		"test.triggered", "test.started", "test.finished fail",
		"devel.delivery.finished fail",
	}
	if diff := cmp.Diff(want, l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	gate.mu.Lock()
	completed := gate.completed
	gate.mu.Unlock()
	if len(completed) != 1 || completed[0].Result != approval.ResultFailed || completed[0].Sequence != promote.ResultFail ||
		completed[0].Message != "task test finished with fail: 2 of 3 requests answered 503" {
		t.Errorf("gate heard %+v, want one Completed failed with the task's message", completed)
	}
	st, err := d.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Result != approval.ResultFailed || st.InFlight != nil {
		t.Errorf("history %+v, in flight %+v; want one failed entry and nothing in flight", st.History, st.InFlight)
	}
	if st.Sequence == nil || st.Sequence.Tasks[2].Status != "" {
		t.Errorf("release was reached: %+v", st.Sequence)
	}
}

// TestSequenceUnimplementedTask: a sequence naming a task kind this
// reconciler does not implement is refused before anything is applied,
// naming the file, line, key and task.
func TestSequenceUnimplementedTask(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	d, gate, l := sequenceDaemon(t, h)
	err := d.Once(ctx)
	want := `pipeline.yaml:5:9: stages[0].sequence[1]: this reconciler has no runner for task "test" (it runs: approval, deployment, release; a verifier runs test and evaluation)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Once = %v, want it to contain %q", err, want)
	}
	if img := cluster.Env(t).Image(t, h.ns["devel"], "web"); img != imageRepo+"web:0.9.0" {
		t.Errorf("web runs %s; nothing should have been applied", img)
	}
	if len(l.names()) != 0 || len(gate.completed) != 0 {
		t.Errorf("heard events %v and outcomes %v", l.names(), gate.completed)
	}
	env, err := d.Environment(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Error, want) {
		t.Errorf("status error = %q, want it to contain %q", env.Error, want)
	}
}

// TestSequenceApprovalRejected: an approval task before deployment waits
// for a person even in a skipConfirmation environment; a rejection
// finishes it and the sequence with fail.
func TestSequenceApprovalRejected(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": "stages: [{name: devel, sequence: [approval, deployment]}]\n"}, "sequence")
	d, _, l := sequenceDaemon(t, h)
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "devel")
	if err != nil || st.Pending == nil {
		t.Fatalf("devel pending after one pass: %+v, %v (skipConfirmation must not skip an approval task)", st, err)
	}
	if _, err := d.Reject(ctx, "devel", st.Pending.PlanHash, approval.Why{By: ghUser("alice"), Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	d.workers["devel"].desk.PickUp(ctx)
	want := []string{"devel.delivery.started", "approval.triggered", "approval.started", "approval.finished fail", "devel.delivery.finished fail"}
	if diff := cmp.Diff(want, l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if e, _ := l.find("approval.finished"); e.Data.Approver != "github:alice" || e.Data.Message != "rejected by github:alice: not today" {
		t.Errorf("approval.finished data = %+v", e.Data)
	}
}

// TestSequenceContinuesAfterRestart: a leader that stops during the test
// task leaves the apply in flight and the run started; the next one runs
// the task again (not the deployment), releases, and records and reports
// the deploy.
func TestSequenceContinuesAfterRestart(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	blocked := &runner{block: true, started: make(chan struct{})}
	d1, gate1, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, blocked.run))
	ctx1, cancel := context.WithCancel(ctx)
	started := blocked.started
	go func() { <-started; cancel() }()
	if err := d1.Once(ctx1); err != nil && ctx1.Err() == nil {
		t.Fatal(err)
	}
	st, err := d1.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlight == nil || st.Sequence == nil || st.Sequence.Done() || st.Sequence.Tasks[1].Status != sequence.StatusStarted {
		t.Fatalf("after the shutdown: in flight %+v, sequence %+v; want the apply in flight and the test task started", st.InFlight, st.Sequence)
	}
	if len(gate1.completed) != 1 || gate1.completed[0].Result != approval.ResultInterrupted {
		t.Errorf("first leader's gate heard %+v, want interrupted", gate1.completed)
	}

	test := &runner{result: sequence.Result{Result: promote.ResultWarning, Message: "slow"}}
	d2, gate2, l2 := sequenceDaemon(t, h, WithTask(promote.TaskTest, test.run))
	if err := d2.Once(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"test.triggered", "test.started", "test.finished warning", "release.triggered", "release.started", "release.finished pass",
		"devel.delivery.finished warning"}
	if diff := cmp.Diff(want, l2.names()); diff != "" {
		t.Errorf("events of the second leader (-want +got):\n%s", diff)
	}
	if len(gate2.completed) != 1 || gate2.completed[0].Result != approval.ResultSucceeded || gate2.completed[0].Sequence != promote.ResultWarning {
		t.Errorf("second leader's gate heard %+v, want succeeded with sequence warning", gate2.completed)
	}
	st, err = d2.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlight != nil || len(st.History) == 0 || st.History[0].Result != approval.ResultSucceeded || st.Sequence.Result != promote.ResultWarning {
		t.Errorf("after the second leader: in flight %+v, history %+v, sequence %+v", st.InFlight, st.History, st.Sequence)
	}
}
