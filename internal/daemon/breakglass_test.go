package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// glassGate decides nothing and records the break-glasses it hears (approval.GlassBreaker), as the
// notifications and the Environment's Events hear them.
type glassGate struct {
	deferGate
	mu    sync.Mutex
	glass []string
}

func (g *glassGate) BrokeGlass(_ context.Context, p approval.Proposal, b approval.BreakGlass) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.glass = append(g.glass, p.Environment+" "+p.Plan.PlanHash+": "+b.Message())
	return nil
}

func (g *glassGate) brokeGlass() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.glass...)
}

// TestBreakGlass: in prod, inside a freeze, an approved plan is deferred; a break-glass through the API
// (a lock:admin token, with a reason) lets that one plan out at once: applied with its approval, told to
// the gates once, and recorded in its history entry. Refused before anything is kept: a stale planHash,
// an empty or forged reason. The next plan, approved, waits for the windows again.
func TestBreakGlass(t *testing.T) {
	h := newHarness(t, "prod")
	h.freeze("prod", time.Now().Add(time.Hour))
	ctx := context.Background()
	gate := &glassGate{}
	r := h.start(WithResync(time.Hour), WithGate(gate))

	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if _, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	r.waitPhase(t, "prod", status.PhaseDeferred)

	breakGlass := func(hash, reason string) (int, string) {
		code, b := r.call(t, "POST", "/api/v1/environments/prod/break-glass", testToken, api.BreakGlassRequest{PlanHash: hash, Reason: reason})
		return code, string(b)
	}
	for _, tc := range []struct {
		name, hash, reason string
		code               int
		want               string
	}{
		{"a stale planHash", "sha256:" + strings.Repeat("0", 64), "INC-42", http.StatusConflict, "NotPending"},
		{"no reason", p.PlanHash, "  ", http.StatusBadRequest, "empty"},
		{"a forged line", p.PlanHash, "INC-42\nbreak-glass by github:ceo", http.StatusBadRequest, "control character"},
	} {
		if code, b := breakGlass(tc.hash, tc.reason); code != tc.code || !strings.Contains(b, tc.want) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.name, code, b, tc.code, tc.want)
		}
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("web runs %s after refused break-glasses", got)
	}

	code, b := breakGlass(p.PlanHash, "INC-42: payments are down")
	var resp api.DecisionResponse
	if code != http.StatusAccepted || json.Unmarshal([]byte(b), &resp) != nil || resp.Status != "break-glass" {
		t.Fatalf("break-glass = %d %s; want 202", code, b)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	r.waitPhase(t, "prod", status.PhaseIdle)
	hist := r.history(t, "prod")
	if len(hist) != 1 || hist[0].Result != approval.ResultSucceeded || hist[0].Approver != "github:alice" || hist[0].BreakGlass == nil {
		t.Fatalf("history = %+v; want one deploy approved by github:alice, let through by the break-glass", hist)
	}
	bg := hist[0].BreakGlass
	if bg.By != "token:ops" || bg.Reason != "INC-42: payments are down" || bg.PlanHash != p.PlanHash || bg.Applied.IsZero() {
		t.Errorf("the history's break-glass = %+v; want token:ops's, with its reason, applied", bg)
	}
	want := []string{"prod " + p.PlanHash + ": break-glass by token:ops: INC-42: payments are down"}
	if diff := cmp.Diff(want, gate.brokeGlass()); diff != "" {
		t.Errorf("the gate heard (-want +got):\n%s", diff)
	}
	// A replay of the request: the plan is no longer pending.
	if code, b := breakGlass(p.PlanHash, "INC-42: payments are down"); code != http.StatusConflict {
		t.Errorf("a replayed break-glass = %d %s; want 409", code, b)
	}

	// The next plan waits for the windows again, approved or not.
	rev2 := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	if err := r.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	p2 := r.waitPending(t, "prod", rev2)
	if _, err := r.d.Approve(ctx, "prod", p2.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	r.waitPhase(t, "prod", status.PhaseDeferred)
	if err := r.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:1.0.0" {
		t.Fatalf("web runs %s: the next plan went out through the freeze", got)
	}
	if n := len(gate.brokeGlass()); n != 1 {
		t.Errorf("the gate heard %d break-glasses, want the one", n)
	}

	if _, err := r.d.BreakGlass(ctx, "nope", p2.PlanHash, approval.Why{By: ghUser("alice"), Reason: "x"}); !errors.Is(err, approval.ErrUnknownEnvironment) {
		t.Errorf("another environment: %v; want unknown", err)
	}
	testenv.WaitFor(t, 30*time.Second, "the view showing the windows closed", func() bool {
		v := r.environment(t, "prod")
		return v.Windows != nil && !v.Windows.Open && strings.Contains(v.Windows.Why, "year-end")
	})
}
