package window

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// glassBreaker is a gate that hears break-glasses (the notifications, the Events).
type glassBreaker struct {
	approval.Gate
	heard []string
}

func (g *glassBreaker) BrokeGlass(_ context.Context, p approval.Proposal, b approval.BreakGlass) error {
	g.heard = append(g.heard, p.Plan.PlanHash+": "+b.Message())
	return nil
}

// TestBreakGlass: a break-glass is kept for the pending plan only, while the windows are closed; it lets
// that plan (at that revision) through, told once; a stale or replayed planHash, another plan, open
// windows or none are refused; the next plan waits again.
func TestBreakGlass(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 24, 16, 0, 0, 0, time.UTC)
	freeze := policy.Windows{Deny: []policy.Window{{Name: "year-end", From: "2026-12-19T00:00:00Z", To: "2027-01-04T08:00:00Z"}}}
	alice := identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: "alice"}}
	store := &memStore{st: state.EnvState{Pending: &approval.Pending{Revision: "r1", PlanHash: "sha256:01", Required: 1}}}
	gate := &glassBreaker{}
	g := New(Config{Env: "prod", Calendar: calendar(t, freeze), Now: func() time.Time { return now }, Store: store, Gate: gate, Log: logr.Discard()})
	defer g.Stop()

	if _, err := g.BreakGlass(ctx, store, "sha256:old", approval.Why{By: alice, Reason: "INC-42"}); !errors.As(err, new(*approval.NotPendingError)) {
		t.Errorf("a stale planHash: %v; want NotPending", err)
	}
	p, err := g.BreakGlass(ctx, store, "sha256:01", approval.Why{By: alice, Reason: "INC-42"})
	if err != nil || p.PlanHash != "sha256:01" {
		t.Fatalf("BreakGlass = %+v, %v", p, err)
	}
	mallory := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "mallory"}}
	if _, err := g.BreakGlass(ctx, store, "sha256:01", approval.Why{By: mallory, Reason: "again"}); err != nil { // a replay changes nothing
		t.Fatal(err)
	}
	want := []approval.BreakGlass{{PlanHash: "sha256:01", Revision: "r1", By: "github:alice", Reason: "INC-42", At: now}}
	if diff := cmp.Diff(want, store.st.BreakGlass); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}

	// The plan break-glassed is let through at its revision only, and told once.
	if v, b := g.JudgeFor(&store.st, "sha256:01", "r1"); v.Open || b == nil || b.By != "github:alice" {
		t.Errorf("JudgeFor the plan = %v, %+v; want closed, let through by github:alice", v.Open, b)
	}
	if _, b := g.JudgeFor(&store.st, "sha256:01", "r2"); b != nil {
		t.Errorf("JudgeFor the same plan at another revision let through by %+v", b)
	}
	prop := approval.Proposal{Environment: "prod", Revision: "r1", Plan: &reconcile.Plan{PlanHash: "sha256:01"}}
	for range 2 {
		if err := g.Through(ctx, prop, want[0]); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"sha256:01: break-glass by github:alice: INC-42"}, gate.heard); diff != "" {
		t.Errorf("the gate heard (-want +got):\n%s", diff)
	}
	if got := store.st.BreakGlass[0].Applied; !got.Equal(now) {
		t.Errorf("applied at %v, want %v", got, now)
	}

	// The next plan waits for the windows again.
	store.st.Pending = &approval.Pending{Revision: "r2", PlanHash: "sha256:02", Required: 1}
	if v, b := g.JudgeFor(&store.st, "sha256:02", "r2"); v.Open || b != nil {
		t.Errorf("JudgeFor the next plan = %v, %+v; want closed, waiting", v.Open, b)
	}

	for _, tc := range []struct {
		name string
		g    *Guard
		want string
	}{
		{"no windows", New(Config{Env: "prod", Now: func() time.Time { return now }, Log: logr.Discard()}), "prod has no deploy windows"},
		{"the windows open", New(Config{Env: "prod", Calendar: calendar(t, freeze), Now: func() time.Time { return now.AddDate(1, 0, 0) }, Log: logr.Discard()}),
			"the deploy windows of prod are open now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var re *approval.RefusedError
			if _, err := tc.g.BreakGlass(ctx, store, "sha256:02", approval.Why{By: alice, Reason: "INC-42"}); !errors.As(err, &re) || !strings.Contains(re.Reason, tc.want) {
				t.Errorf("BreakGlass = %v; want refused saying %q", err, tc.want)
			}
		})
	}
	store.st.Pending.Release = true
	if _, err := g.BreakGlass(ctx, store, "sha256:02", approval.Why{By: alice, Reason: "INC-42"}); !errors.As(err, new(*approval.NotPendingError)) {
		t.Errorf("a release approval's plan: %v; want NotPending (no window holds it)", err)
	}
}
