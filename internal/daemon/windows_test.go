package daemon

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// freeze sets env's windows to one deny window from an hour ago until until (RFC 3339, whole seconds).
func (h *harness) freeze(env string, until time.Time) {
	h.t.Helper()
	e := h.cfg.Environments[env]
	e.Windows = policy.Windows{Deny: []policy.Window{{Name: "year-end",
		From: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), To: until.UTC().Format(time.RFC3339)}}}
	h.cfg.Environments[env] = e
	if err := h.cfg.Validate(); err != nil {
		h.t.Fatal(err)
	}
}

// waitPhase waits until env's phase is want and returns the environment.
func (r *running) waitPhase(t testing.TB, env string, want status.Phase) status.Environment {
	t.Helper()
	var v status.Environment
	testenv.WaitFor(t, 30*time.Second, env+" in phase "+string(want), func() bool {
		v = r.environment(t, env)
		return v.Phase == want
	})
	return v
}

// deferGate decides nothing and records what it hears of deferred plans (approval.Deferrer), as the
// notifications hear it.
type deferGate struct {
	mu       sync.Mutex
	deferred []string // environment: why
}

func (g *deferGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, nil
}
func (g *deferGate) Superseded(context.Context, approval.Proposal, string) error          { return nil }
func (g *deferGate) Completed(context.Context, approval.Proposal, approval.Outcome) error { return nil }
func (g *deferGate) Deferred(_ context.Context, p approval.Proposal, why string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deferred = append(g.deferred, p.Environment+": "+why)
	return nil
}

func (g *deferGate) heard() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.deferred)
}

// TestWindowDefersSkipConfirmation: a skipConfirmation environment inside a freeze does not apply its plan:
// it is Deferred, says why and when the freeze ends (in the API and to the gates: deploy.deferred), and
// patches nothing; when the freeze ends, the worker's timer (no push, no resync: the resync is an hour)
// wakes it and the plan is applied, once.
func TestWindowDefersSkipConfirmation(t *testing.T) {
	h := newHarness(t, "devel")
	end := time.Now().Add(12 * time.Second).Truncate(time.Second)
	h.freeze("devel", end)
	gate := &deferGate{}
	r := h.start(WithResync(time.Hour), WithGate(gate))

	v := r.waitPhase(t, "devel", status.PhaseDeferred)
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("deferred, and web runs %s: the plan was applied inside the freeze", got)
	}
	want := "waiting for the deploy window (inside the deny window year-end): opens " + end.UTC().Format("Mon 2 Jan 2006 15:04") + " UTC"
	if len(v.Waiting) != 1 || v.Waiting[0] != want {
		t.Errorf("waiting = %q, want [%q]", v.Waiting, want)
	}
	if hist := r.history(t, "devel"); len(hist) != 0 {
		t.Errorf("history inside the freeze: %+v", hist)
	}
	if diff := cmp.Diff([]string{"devel: " + want}, gate.heard()); diff != "" {
		t.Errorf("the gate heard (-want +got):\n%s", diff)
	}

	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	if now := time.Now(); now.Before(end) {
		t.Errorf("applied at %v, before the freeze ended at %v", now, end)
	}
	v = r.waitPhase(t, "devel", status.PhaseIdle)
	if hist := r.history(t, "devel"); len(hist) != 1 || hist[0].Result != "succeeded" {
		t.Errorf("history after the freeze = %+v, want one deploy", hist)
	}
	if len(v.Waiting) != 0 {
		t.Errorf("waiting after the freeze = %q", v.Waiting)
	}
	if n := len(gate.heard()); n != 1 {
		t.Errorf("the gate heard %d deferrals, want the one", n)
	}
}

// TestWindowDefersApprovedPlan: in prod, inside a freeze, a plan may still be approved: the approval is
// counted, answered with why it waits, and the plan is Deferred, not applied. A pass later, and after a
// restart, it is still deferred with its approval (not applied, not forgotten, not proposed again); a
// restart whose freeze has ended applies it with that approval.
func TestWindowDefersApprovedPlan(t *testing.T) {
	h := newHarness(t, "prod")
	h.freeze("prod", time.Now().Add(time.Hour))
	ctx := context.Background()
	r := h.start(WithResync(time.Hour))

	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice"))
	if err != nil || !got.Complete() {
		t.Fatalf("Approve inside the freeze = %+v, %v; want it counted", got, err)
	}
	if n := len(got.Reasons); n == 0 || !strings.HasPrefix(got.Reasons[n-1], "waiting for the deploy window (inside the deny window year-end): opens ") {
		t.Errorf("the approval's answer says %q, want why the plan waits", got.Reasons)
	}
	r.waitPhase(t, "prod", status.PhaseDeferred)
	if err := r.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	v := r.environment(t, "prod")
	if v.Phase != status.PhaseDeferred || v.Pending == nil || v.Pending.PlanHash != p.PlanHash || !v.Pending.Complete() {
		t.Fatalf("a pass later: phase %s, pending %+v; want Deferred with the approved plan", v.Phase, v.Pending)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("web runs %s inside the freeze", got)
	}

	// A restart inside the freeze: the new process's first pass finds the plan deferred.
	r.stop()
	restarted := time.Now()
	r = h.start(WithResync(time.Hour))
	testenv.WaitFor(t, 30*time.Second, "a pass of the restarted daemon", func() bool {
		return r.environment(t, "prod").ObservedAt.After(restarted.Add(-time.Second))
	})
	v = r.environment(t, "prod")
	if v.Phase != status.PhaseDeferred || v.Pending == nil || v.Pending.PlanHash != p.PlanHash || !v.Pending.Complete() {
		t.Fatalf("after a restart: phase %s, pending %+v; want Deferred with the approved plan", v.Phase, v.Pending)
	}
	if len(v.Waiting) != 1 || !strings.Contains(v.Waiting[0], "year-end") {
		t.Errorf("waiting after a restart = %q", v.Waiting)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("web runs %s after a restart inside the freeze", got)
	}

	// The freeze over (the configuration changed): applied with alice's approval.
	r.stop()
	h.freeze("prod", time.Now().Add(-time.Minute))
	r = h.start(WithResync(time.Hour))
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	r.waitPhase(t, "prod", status.PhaseIdle)
	if hist := r.history(t, "prod"); len(hist) != 1 || hist[0].Result != "succeeded" || hist[0].Approver != "github:alice" {
		t.Errorf("history = %+v, want one deploy approved by github:alice", hist)
	}
}
