package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// breakGlassOn posts a break-glass to r's API as token and returns the status and body.
func breakGlassOn(t *testing.T, r *running, env, token, hash, reason string) (int, string) {
	t.Helper()
	code, b := r.call(t, "POST", "/api/v1/environments/"+env+"/break-glass", token, api.BreakGlassRequest{PlanHash: hash, Reason: reason})
	return code, string(b)
}

// waitDeferredAt waits until env is Deferred at revision, nothing pending, and returns its view.
func waitDeferredAt(t *testing.T, r *running, env, revision string) status.Environment {
	t.Helper()
	var v status.Environment
	testenv.WaitFor(t, 30*time.Second, env+" deferred at "+approval.ShortRevision(revision), func() bool {
		v = r.environment(t, env)
		return v.Phase == status.PhaseDeferred && v.Revision == revision && v.PlanHash != "" && v.Pending == nil
	})
	return v
}

// TestBreakGlassSkipConfirmation: devel deploys without approval (skipConfirmation); inside a freeze its
// plan is deferred, and nothing is pending. A break-glass names the plan by the planHash its status shows
// (GET …/environments/devel): refused before anything is kept for a stale planHash (409), an empty or
// forged reason (400) and an environment that does not exist (404); accepted as alice's token, it lets that
// plan out at once, approved by skipConfirmation, told to the gates once and recorded in its history entry.
// A replay is refused (409: nothing waits), and the next plan waits for the windows again.
func TestBreakGlassSkipConfirmation(t *testing.T) {
	h := newHarness(t, "devel")
	h.freeze("devel", time.Now().Add(time.Hour))
	ctx := context.Background()
	gate := &glassGate{}
	r := h.start(WithResync(time.Hour), WithGate(gate))

	rev := h.git.Head(t, "manifests", "main")
	v := waitDeferredAt(t, r, "devel", rev)
	for _, tc := range []struct {
		name, env, hash, reason string
		code                    int
		want                    string
	}{
		{"a stale planHash", "devel", "sha256:" + strings.Repeat("0", 64), "INC-42", http.StatusConflict, "NotPending"},
		{"no reason", "devel", v.PlanHash, "", http.StatusBadRequest, "empty"},
		{"a forged line", "devel", v.PlanHash, "INC-42\r\nbreak-glass by github:ceo", http.StatusBadRequest, "control character"},
		{"a huge reason", "devel", v.PlanHash, strings.Repeat("x", 10000), http.StatusBadRequest, "at most 500"},
		{"another environment", "prod", v.PlanHash, "INC-42", http.StatusNotFound, "UnknownEnvironment"},
	} {
		if code, b := breakGlassOn(t, r, tc.env, tokenOf("alice"), tc.hash, tc.reason); code != tc.code || !strings.Contains(b, tc.want) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.name, code, b, tc.code, tc.want)
		}
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("web runs %s after refused break-glasses", got)
	}

	code, b := breakGlassOn(t, r, "devel", tokenOf("alice"), v.PlanHash, "INC-42: the fix must reach devel")
	var resp api.DecisionResponse
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &resp) != nil || resp.Status != "break-glass" ||
		!strings.Contains(resp.Message, "applying revision "+approval.ShortRevision(rev)+" to devel through its closed deploy windows") {
		t.Fatalf("break-glass of the deferred plan = %d %s; want 202, applying", code, b)
	}
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	r.waitPhase(t, "devel", status.PhaseIdle)
	hist := r.history(t, "devel")
	if len(hist) != 1 || hist[0].Result != approval.ResultSucceeded || !approval.IsAuto(hist[0].Approver) || hist[0].BreakGlass == nil {
		t.Fatalf("history = %+v; want one deploy by skipConfirmation, let through by the break-glass", hist)
	}
	if bg := hist[0].BreakGlass; bg.By != "token:alice" || bg.Reason != "INC-42: the fix must reach devel" || bg.PlanHash != v.PlanHash || bg.Applied.IsZero() {
		t.Errorf("the history's break-glass = %+v; want alice's token's, with its reason, applied", bg)
	}
	want := []string{"devel " + v.PlanHash + ": break-glass by token:alice: INC-42: the fix must reach devel"}
	if diff := cmp.Diff(want, gate.brokeGlass()); diff != "" {
		t.Errorf("the gate heard (-want +got):\n%s", diff)
	}
	if code, b := breakGlassOn(t, r, "devel", tokenOf("alice"), v.PlanHash, "INC-42: the fix must reach devel"); code != http.StatusConflict {
		t.Errorf("a replayed break-glass = %d %s; want 409", code, b)
	}

	// The next plan waits for the windows again.
	rev2 := h.commit("devel", true, map[string]string{"web": "1.1.0"})
	if err := r.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	waitDeferredAt(t, r, "devel", rev2)
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
		t.Fatalf("web runs %s: the next plan went out through the freeze", got)
	}
	if n := len(gate.brokeGlass()); n != 1 {
		t.Errorf("the gate heard %d break-glasses, want the one", n)
	}
}

// TestBreakGlassOnStandby: two replicas; inside a freeze, devel's skipConfirmation plan and prod's approved
// plan are deferred by the leader. Break-glasses given through the standby's API reach the leader through
// the state, and each plan goes out once: applied by the leader, told to its gates once (the standby's
// gates hear nothing), one history entry each. The same requests replayed on the leader are refused (409).
func TestBreakGlassOnStandby(t *testing.T) {
	h := newHarness(t, "devel", "prod")
	until := time.Now().Add(time.Hour)
	h.freeze("devel", until)
	h.freeze("prod", until)
	ctx := context.Background()
	leaderGate, standbyGate := &glassGate{}, &glassGate{}
	leader := h.start(WithResync(time.Hour), WithGate(leaderGate))
	rev := h.git.Head(t, "manifests", "main")
	devel := waitDeferredAt(t, leader, "devel", rev)
	p := leader.waitPending(t, "prod", rev)
	if _, err := leader.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	leader.waitPhase(t, "prod", status.PhaseDeferred)
	standby := h.start(WithResync(time.Hour), WithGate(standbyGate))
	testenv.WaitFor(t, 30*time.Second, "the standby serving devel deferred", func() bool {
		return standby.environment(t, "devel").Phase == status.PhaseDeferred
	})

	for env, hash := range map[string]string{"devel": devel.PlanHash, "prod": p.PlanHash} {
		if code, b := breakGlassOn(t, standby, env, tokenOf("bob"), hash, "INC-7: "+env); code != http.StatusAccepted {
			t.Fatalf("break-glass of %s on the standby = %d %s; want 202", env, code, b)
		}
	}
	for _, env := range []string{"devel", "prod"} {
		waitImage(t, h.ns[env], "web", imageRepo+"web:1.0.0")
		leader.waitPhase(t, env, status.PhaseIdle)
		hist := leader.history(t, env)
		if len(hist) != 1 || hist[0].BreakGlass == nil || hist[0].BreakGlass.By != "token:bob" {
			t.Errorf("%s's history = %+v; want one deploy let through by bob's break-glass", env, hist)
		}
	}
	heard := leaderGate.brokeGlass()
	if len(heard) != 2 || len(standbyGate.brokeGlass()) != 0 {
		t.Errorf("the leader's gates heard %q, the standby's %q; want each break-glass once, from the leader", heard, standbyGate.brokeGlass())
	}
	for env, hash := range map[string]string{"devel": devel.PlanHash, "prod": p.PlanHash} {
		if code, b := breakGlassOn(t, leader, env, tokenOf("bob"), hash, "INC-7: "+env); code != http.StatusConflict {
			t.Errorf("the break-glass of %s replayed on the leader = %d %s; want 409", env, code, b)
		}
	}
}
