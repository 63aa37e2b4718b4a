package daemon

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// releasePipeline is Keptn's shipyard order: deploy, verify, then a person
// releases.
const releasePipeline = "stages: [{name: devel, sequence: [deployment, {name: test, properties: {suite: smoke}}, approval, release]}]\n"

// untilRelease are the events of a run up to its release approval waiting.
var untilRelease = []string{
	"devel.delivery.started",
	"deployment.triggered", "deployment.started", "deployment.finished pass",
	"test.triggered", "test.started", "test.finished pass",
	"approval.triggered", "approval.started",
}

// releaseWorld is devel (skipConfirmation, web 0.9.0 → 1.0.0) with
// releasePipeline and a test task that passes, deployed and waiting for its
// release approval after one pass.
type releaseWorld struct {
	h    *harness
	d    *Daemon
	gate *recordingGate
	l    *listener
	rev  string
}

func newReleaseWorld(t *testing.T, edit func(*config.Environment)) *releaseWorld {
	t.Helper()
	h := newHarness(t, "devel")
	if edit != nil {
		ec := h.cfg.Environments["devel"]
		edit(&ec)
		h.cfg.Environments["devel"] = ec
	}
	rev := h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": releasePipeline}, "release approval")
	w := &releaseWorld{h: h, rev: rev}
	w.d, w.gate, w.l = w.daemon(t)
	if err := w.d.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

// daemon is a new process over w's state (Once: no leader election).
func (w *releaseWorld) daemon(t *testing.T) (*Daemon, *recordingGate, *listener) {
	t.Helper()
	pass := &runner{result: sequence.Result{Result: promote.ResultPass, Message: "smoke suite passed"}}
	return sequenceDaemon(t, w.h, WithTask(promote.TaskTest, pass.run))
}

// waiting checks that d's devel waits for the release approval of rev,
// deployed and not recorded, and returns the pending release.
func (w *releaseWorld) waiting(t *testing.T, d *Daemon, rev string) *approval.Pending {
	t.Helper()
	ctx := context.Background()
	st, err := d.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	p := st.Pending
	if p == nil || !p.Release || p.Revision != rev || st.InFlight == nil || p.PlanHash != st.InFlight.PlanHash {
		t.Fatalf("pending %+v, in flight %+v; want a pending release of %s on the applied plan's planHash", p, st.InFlight, approval.ShortRevision(rev))
	}
	if st.Sequence == nil || !st.Sequence.AwaitingRelease() || st.Sequence.Revision != rev {
		t.Fatalf("sequence %+v, want it waiting for its release approval", st.Sequence)
	}
	for _, e := range st.History {
		if e.Revision == rev {
			t.Errorf("history has %s already: %+v; the apply is recorded once released", approval.ShortRevision(rev), e)
		}
	}
	v, err := d.Environment(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if want := "waiting for release approval of " + approval.ShortRevision(rev); !slices.Contains(v.Waiting, want) {
		t.Errorf("status waiting = %q, want it to say %q", v.Waiting, want)
	}
	return p
}

// decideNow hands dc straight to devel's worker, as the leader's API does,
// and returns its answer once the worker has carried it out.
func decideNow(t *testing.T, d *Daemon, dc pass.Decision) (*approval.Pending, error) {
	t.Helper()
	if dc.At.IsZero() {
		dc.At = time.Now()
	}
	dc.Reply = make(chan pass.Reply, 1)
	d.workers["devel"].desk.Decide(context.Background(), dc)
	r := <-dc.Reply
	return r.Pending, r.Err
}

func (w *releaseWorld) generation(t *testing.T) int64 {
	t.Helper()
	dep, err := cluster.Env(t).Clientset.AppsV1().Deployments(w.h.ns["devel"]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep.Generation
}

func completedOf(g *recordingGate) []approval.Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.completed)
}

// TestReleaseApprovalReleases: an approval after the deployment and its
// verification waits for a person (even in a skipConfirmation environment):
// deployed, not recorded, the gate not completed, the status saying so, and
// further passes changing nothing. A decision taken before the wait began
// is refused as stale; an approval runs the release, finishes the run with
// pass, records the apply with who released it and completes the gate
// succeeded (the check run success: promotion may go on).
func TestReleaseApprovalReleases(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, nil)
	if diff := cmp.Diff(untilRelease, w.l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	p := w.waiting(t, w.d, w.rev)
	if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
		t.Errorf("devel runs %s, want web:1.0.0 deployed before the release approval", got)
	}
	if c := completedOf(w.gate); len(c) != 0 || w.gate.proposed != 1 {
		t.Errorf("gate: completed %+v, proposed %d; want nothing completed and the release proposed once", c, w.gate.proposed)
	}
	if v, err := w.d.Environment(ctx, "devel"); err != nil || v.Phase != status.PhaseAwaitingRelease {
		t.Errorf("phase while the release waits = %v, %v; want AwaitingRelease", v, err)
	}
	gen := w.generation(t)
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.l.names()); n != len(untilRelease) || w.generation(t) != gen || len(completedOf(w.gate)) != 0 {
		t.Errorf("a pass while waiting: %d events, generation %d → %d, completed %+v; want nothing done", n, gen, w.generation(t), completedOf(w.gate))
	}

	// An approval of the plan taken before it was applied (queued while it
	// was) is not the release's.
	since := w.d.workers["devel"].release.Since()
	if _, err := decideNow(t, w.d, pass.Decision{Approve: true, PlanHash: p.PlanHash, Who: ghUser("bob"), At: since.Add(-time.Millisecond)}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("a decision from before the wait = %v, want ErrNotPending", err)
	}
	if _, err := w.d.Approve(ctx, "devel", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	w.d.workers["devel"].desk.PickUp(ctx)

	want := append(slices.Clone(untilRelease), "approval.finished pass", "release.triggered", "release.started", "release.finished pass", "devel.delivery.finished pass")
	if diff := cmp.Diff(want, w.l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if e, _ := w.l.find("approval.finished"); e.Data.Approver != "github:alice" || e.Data.Message != "approved by github:alice" {
		t.Errorf("approval.finished data: approver %q, message %q; want alice, approved by alice", e.Data.Approver, e.Data.Message)
	}
	st, err := w.d.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != nil || st.InFlight != nil || len(st.History) != 1 {
		t.Fatalf("after the release: pending %+v, in flight %+v, history %d; want one entry and nothing pending", st.Pending, st.InFlight, len(st.History))
	}
	if e := st.History[0]; e.Result != approval.ResultSucceeded || e.ReleasedBy != "github:alice" || e.Approver != approval.AutoApprover || e.PlanHash != p.PlanHash {
		t.Errorf("history entry: %s, released by %q, approver %q, planHash %s; want succeeded, alice, %s, %s",
			e.Result, e.ReleasedBy, e.Approver, e.PlanHash, approval.AutoApprover, p.PlanHash)
	}
	if c := completedOf(w.gate); len(c) != 1 || c[0].Result != approval.ResultSucceeded || c[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want one Completed succeeded with sequence pass", c)
	}
	v, err := w.d.Environment(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Waiting) != 0 || v.Sequence.Result != promote.ResultPass || v.Phase != status.PhaseIdle {
		t.Errorf("status: waiting %q, sequence %+v, phase %q; want nothing waited for, the run passed, Idle", v.Waiting, v.Sequence, v.Phase)
	}
	if _, err := decideNow(t, w.d, pass.Decision{Approve: true, PlanHash: p.PlanHash, Who: ghUser("bob")}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("approving the released plan again = %v, want ErrNotPending", err)
	}
}

// TestReleaseApprovalRejected: a rejected release finishes the approval
// task and the run with fail ("rejected by X: reason") and fails the
// deploy: recorded and reported failed (the revision stays deployed), or,
// with onFailedRollout: rollback, rolled back as a failed verification is.
func TestReleaseApprovalRejected(t *testing.T) {
	for _, tc := range []struct {
		name, onFailed, wantResult, wantImage string
	}{
		{"stay", config.OnFailedRolloutStay, approval.ResultFailed, "web:1.0.0"},
		{"rollback", config.OnFailedRolloutRollback, approval.ResultRolledBack, "web:0.9.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newReleaseWorld(t, func(ec *config.Environment) { ec.OnFailedRollout = tc.onFailed })
			p := w.waiting(t, w.d, w.rev)
			if _, err := w.d.Reject(ctx, "devel", p.PlanHash, approval.Why{By: ghUser("alice"), Reason: "not before the sale"}); err != nil {
				t.Fatal(err)
			}
			w.d.workers["devel"].desk.PickUp(ctx)
			want := append(slices.Clone(untilRelease), "approval.finished fail", "devel.delivery.finished fail")
			if diff := cmp.Diff(want, w.l.names()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			const why = "rejected by github:alice: not before the sale"
			if e, _ := w.l.find("approval.finished"); e.Data.Approver != "github:alice" || e.Data.Message != why {
				t.Errorf("approval.finished data: approver %q, message %q; want alice, %q", e.Data.Approver, e.Data.Message, why)
			}
			st, err := w.d.store.Load(ctx, "devel")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.History) != 1 || st.Pending != nil || st.InFlight != nil {
				t.Fatalf("history %+v, pending %+v, in flight %+v; want one entry and nothing pending", st.History, st.Pending, st.InFlight)
			}
			if e := st.History[0]; e.Result != tc.wantResult || !strings.Contains(e.Message, why) || e.ReleasedBy != "" {
				t.Errorf("history entry: %s %q, released by %q; want %s saying %q", e.Result, e.Message, e.ReleasedBy, tc.wantResult, why)
			}
			if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+tc.wantImage {
				t.Errorf("devel runs %s, want %s", got, tc.wantImage)
			}
			if c := completedOf(w.gate); len(c) != 1 || c[0].Result != tc.wantResult || !strings.Contains(c[0].Message, why) {
				t.Errorf("gate heard %+v, want one Completed %s saying %q", c, tc.wantResult, why)
			}
			if rolledBack := st.Failed != nil && st.Failed.Revision == w.rev; rolledBack != (tc.onFailed == config.OnFailedRolloutRollback) {
				t.Errorf("failed revision %+v; rolled back %v", st.Failed, rolledBack)
			}
			if st.Failed != nil && st.Failed.Cause != "release "+why {
				t.Errorf("rollback cause %q, want %q", st.Failed.Cause, "release "+why)
			}
		})
	}
}

// TestReleaseApprovalSuperseded: a newer revision while the release
// approval waits supersedes it: the run aborts saying why, the apply is
// recorded (deployed, never released), the new plan is applied and waits
// for its own release approval, and a decision for the old planHash is
// refused as stale.
func TestReleaseApprovalSuperseded(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, nil)
	old := w.waiting(t, w.d, w.rev)
	rev2 := w.h.commit("devel", true, map[string]string{"web": "1.1.0"})
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	var aborted sequence.Event
	for _, e := range w.l.events {
		if e.Name == "devel.delivery.finished" && e.Data.Revision == w.rev {
			aborted = e
		}
	}
	if want := "aborted: its release approval was superseded by revision " + approval.ShortRevision(rev2); aborted.Data.Status != sequence.EventAborted || aborted.Data.Message != want {
		t.Errorf("the old run finished %q: %q; want aborted: %q", aborted.Data.Status, aborted.Data.Message, want)
	}
	w.waiting(t, w.d, rev2)
	if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:1.1.0" {
		t.Errorf("devel runs %s, want the new revision's web:1.1.0", got)
	}
	st, err := w.d.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Revision != w.rev || st.History[0].Result != approval.ResultSucceeded ||
		!strings.Contains(st.History[0].Message, "never released") {
		t.Errorf("history %+v; want the old apply recorded, deployed and never released", st.History)
	}
	if _, err := decideNow(t, w.d, pass.Decision{Approve: true, PlanHash: old.PlanHash, Who: ghUser("alice")}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("approving the superseded release = %v, want ErrNotPending", err)
	}
}

// TestReleaseApprovalAfterRestart: a new process finds the wait in the
// state: it shows it on its gate again, applies nothing, and its decision
// releases what the first one deployed.
func TestReleaseApprovalAfterRestart(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, nil)
	p := w.waiting(t, w.d, w.rev)
	gen := w.generation(t)
	d2, gate2, l2 := w.daemon(t)
	if err := d2.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if w.generation(t) != gen || len(l2.names()) != 0 || gate2.proposed != 1 || len(completedOf(gate2)) != 0 {
		t.Errorf("new process: generation %d → %d, events %v, proposed %d, completed %+v; want nothing applied or announced and the wait shown again",
			gen, w.generation(t), l2.names(), gate2.proposed, completedOf(gate2))
	}
	if p2 := w.waiting(t, d2, w.rev); p2.PlanHash != p.PlanHash || !p2.ProposedAt.Equal(p.ProposedAt) {
		t.Errorf("pending release %+v, want the one kept %+v", p2, p)
	}
	if _, err := d2.Approve(ctx, "devel", p.PlanHash, ghUser("carol")); err != nil {
		t.Fatal(err)
	}
	d2.workers["devel"].desk.PickUp(ctx)
	want := []string{"approval.finished pass", "release.triggered", "release.started", "release.finished pass", "devel.delivery.finished pass"}
	if diff := cmp.Diff(want, l2.names()); diff != "" {
		t.Errorf("events of the new process (-want +got):\n%s", diff)
	}
	if c := completedOf(gate2); len(c) != 1 || c[0].Result != approval.ResultSucceeded || c[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want succeeded with sequence pass", c)
	}
	if h := w.history(t, d2); len(h) != 1 || h[0].ReleasedBy != "github:carol" || w.generation(t) != gen {
		t.Errorf("history %+v, generation %d → %d; want one entry released by carol and nothing patched again", h, gen, w.generation(t))
	}
}

func (w *releaseWorld) history(t *testing.T, d *Daemon) []approval.Entry {
	t.Helper()
	st, err := d.store.Load(context.Background(), "devel")
	if err != nil {
		t.Fatal(err)
	}
	return st.History
}

// TestReleaseApprovalTwoOfThree: with approvals.required 2, over the API,
// the release waits for two distinct approvers (the same one twice counts
// once) and names both in the history; a decision on another planHash is a
// 409.
func TestReleaseApprovalTwoOfThree(t *testing.T) {
	h := newHarness(t, "devel")
	ec := h.cfg.Environments["devel"]
	ec.Approvals = config.Approvals{Required: 2}
	h.cfg.Environments["devel"] = ec
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": releasePipeline}, "release approval")
	pass := &runner{result: sequence.Result{Result: promote.ResultPass}}
	gate := &recordingGate{}
	r := h.start(WithTask(promote.TaskTest, pass.run), WithGate(gate))
	var p *approval.Pending
	testenv.WaitFor(t, 30*time.Second, "a pending release", func() bool {
		p = r.environment(t, "devel").Pending
		return p != nil && p.Release
	})
	approve := func(who, planHash string, want int) string {
		t.Helper()
		code, b := r.call(t, "POST", "/api/v1/environments/devel/approve", tokenOf(who), api.DecisionRequest{PlanHash: planHash})
		if code != want {
			t.Fatalf("%s approves: %d %s, want %d", who, code, b, want)
		}
		return string(b)
	}
	approve("alice", "sha256:stale", http.StatusConflict)
	approve("alice", p.PlanHash, http.StatusAccepted)
	approve("alice", p.PlanHash, http.StatusAccepted)
	v := r.environment(t, "devel")
	if v.Pending == nil || len(v.Pending.Approvals) != 1 || v.Sequence == nil || !v.Sequence.AwaitingRelease() {
		t.Fatalf("after alice twice: pending %+v, sequence %+v; want one approval counted and the release still waiting", v.Pending, v.Sequence)
	}
	if b := approve("bob", p.PlanHash, http.StatusAccepted); !strings.Contains(b, "approved by token:bob (for github:bob); releasing revision "+approval.ShortRevision(p.Revision)+" in devel") {
		t.Errorf("bob's approval answered %s; want it to say the revision is released", b)
	}
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the release recorded", func() bool { hist = r.history(t, "devel"); return len(hist) == 1 })
	if e := hist[0]; e.Result != approval.ResultSucceeded || e.ReleasedBy != "token:alice, token:bob" {
		t.Errorf("history entry: %s released by %q; want succeeded, alice, bob", e.Result, e.ReleasedBy)
	}
	// The gate is told after the history is written: wait for it.
	testenv.WaitFor(t, 30*time.Second, "the gate told", func() bool { return len(completedOf(gate)) > 0 })
	if c := completedOf(gate); len(c) != 1 || c[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want one Completed with sequence pass", c)
	}
}

// TestContinuedRunFailureRollsBack: a leader stopped during the
// verification leaves the run to the next; when the test task then fails,
// onFailedRollout: rollback puts the previous images back, exactly as the
// first leader would have: rolled-back entry, the failed revision kept out,
// the gate told.
func TestContinuedRunFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	ec := h.cfg.Environments["devel"]
	ec.OnFailedRollout = config.OnFailedRolloutRollback
	h.cfg.Environments["devel"] = ec
	rev := h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	blocked := &runner{block: true, started: make(chan struct{})}
	d1, _, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, blocked.run))
	ctx1, cancel := context.WithCancel(ctx)
	started := blocked.started
	go func() { <-started; cancel() }()
	if err := d1.Once(ctx1); err != nil && ctx1.Err() == nil {
		t.Fatal(err)
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
		t.Fatalf("devel runs %s after the first leader, want web:1.0.0", got)
	}

	failing := &runner{result: sequence.Result{Result: promote.ResultFail, Message: "2 of 3 requests answered 503"}}
	d2, gate2, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, failing.run))
	if err := d2.Once(ctx); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("Once = %v, want the failed verification rolled back", err)
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("devel runs %s after the continued run failed, want web:0.9.0 again", got)
	}
	st, err := d2.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	// The first leader recorded its interruption; the second the rollback.
	var results []string
	for _, e := range st.History {
		results = append(results, e.Result)
	}
	if diff := cmp.Diff([]string{approval.ResultRolledBack, approval.ResultInterrupted}, results); diff != "" {
		t.Errorf("history results (-want +got):\n%s", diff)
	}
	if len(st.History) == 0 || !strings.Contains(st.History[0].Message, "verification failed: task test finished with fail: 2 of 3 requests answered 503") ||
		st.InFlight != nil || st.Failed == nil || st.Failed.Revision != rev {
		t.Errorf("newest entry %q, in flight %+v, failed %+v; want rolled back for the verification and %s kept out", st.History[0].Message, st.InFlight, st.Failed, approval.ShortRevision(rev))
	}
	if c := completedOf(gate2); len(c) != 1 || c[0].Result != approval.ResultRolledBack {
		t.Errorf("gate heard %+v, want rolled back", c)
	}
	// Not applied again at the next pass.
	if err := d2.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("devel runs %s after another pass, want web:0.9.0 still", got)
	}
}

// TestReleaseApprovalIgnoresEarlierApprovals: where a person approves the
// plan too (prod: no skipConfirmation), that is a decision of its own. A
// second approval of the plan, handed over while the first was carried out,
// is dropped when the release approval begins to wait: the release still
// waits for a person, with no approval counted.
func TestReleaseApprovalIgnoresEarlierApprovals(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "prod")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": strings.ReplaceAll(releasePipeline, "devel", "prod")}, "release approval")
	pass := &runner{result: sequence.Result{Result: promote.ResultPass}}
	d, gate, l := sequenceDaemon(t, h, WithTask(promote.TaskTest, pass.run))
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil || st.Pending.Release {
		t.Fatalf("prod after one pass: pending %+v (%v); want the plan awaiting approval before it is applied", st.Pending, err)
	}
	for _, who := range []string{"alice", "bob"} {
		if _, err := d.Approve(ctx, "prod", st.Pending.PlanHash, ghUser(who)); err != nil {
			t.Fatal(err)
		}
	}
	d.workers["prod"].desk.PickUp(ctx)
	want := []string{"prod.delivery.started", "approval.triggered", "approval.started", "approval.finished pass",
		"deployment.triggered", "deployment.started", "deployment.finished pass",
		"test.triggered", "test.started", "test.finished pass",
		"approval.triggered", "approval.started"}
	if diff := cmp.Diff(want, l.names()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	st, err = d.store.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Pending; p == nil || !p.Release || len(p.Approvals) != 0 || len(st.Handovers) != 0 {
		t.Errorf("pending %+v, handovers %+v; want the release waiting with no approval and nothing queued", p, st.Handovers)
	}
	if c := completedOf(gate); len(c) != 0 {
		t.Errorf("gate heard %+v; want nothing completed before the release", c)
	}
}

// TestReleaseApprovalNewLeader: a leader stopped while the release
// approval waits leaves it to the next, which shows it (status, pending),
// patches nothing, and releases on an approval over its API.
func TestReleaseApprovalNewLeader(t *testing.T) {
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": releasePipeline}, "release approval")
	pass := &runner{result: sequence.Result{Result: promote.ResultPass}}
	r1 := h.start(WithTask(promote.TaskTest, pass.run), WithGate(&recordingGate{}))
	var p *approval.Pending
	testenv.WaitFor(t, 30*time.Second, "a pending release", func() bool {
		p = r1.environment(t, "devel").Pending
		return p != nil && p.Release
	})
	r1.stop()
	dep, err := cluster.Env(t).Clientset.AppsV1().Deployments(h.ns["devel"]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	gate := &recordingGate{}
	r2 := h.start(WithTask(promote.TaskTest, pass.run), WithGate(gate))
	testenv.WaitFor(t, 30*time.Second, "the new leader showing the release", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return gate.proposed > 0
	})
	v := r2.environment(t, "devel")
	if v.Pending == nil || v.Pending.PlanHash != p.PlanHash || !slices.Contains(v.Waiting, "waiting for release approval of "+approval.ShortRevision(p.Revision)) {
		t.Fatalf("new leader: pending %+v, waiting %q; want the same release waiting", v.Pending, v.Waiting)
	}
	if code, b := r2.call(t, "POST", "/api/v1/environments/devel/approve", tokenOf("erin"), api.DecisionRequest{PlanHash: p.PlanHash}); code != http.StatusAccepted {
		t.Fatalf("approve: %d %s", code, b)
	}
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the release recorded", func() bool { hist = r2.history(t, "devel"); return len(hist) == 1 })
	if hist[0].ReleasedBy != "token:erin" || hist[0].Result != approval.ResultSucceeded {
		t.Errorf("history entry: %s released by %q; want succeeded, erin", hist[0].Result, hist[0].ReleasedBy)
	}
	again, err := cluster.Env(t).Clientset.AppsV1().Deployments(h.ns["devel"]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != dep.Generation {
		t.Errorf("web generation %d → %d: the new leader applied again", dep.Generation, again.Generation)
	}
}
