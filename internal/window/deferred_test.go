package window

import (
	"context"
	"encoding/json"
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
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// downStore is the state's API server down: every write fails, and nothing is kept.
type downStore struct{}

var errDown = errors.New("connection refused")

func (downStore) Update(context.Context, string, func(*state.EnvState)) error { return errDown }

// deferredState is a skipConfirmation environment whose windows deferred plan hash at revision: phase
// Deferred, nothing pending, the status naming the plan.
func deferredState(t *testing.T, revision, hash string) state.EnvState {
	t.Helper()
	obs, err := json.Marshal(status.Observation{Revision: revision, PlanHash: hash, SkipConfirmation: true})
	if err != nil {
		t.Fatal(err)
	}
	return state.EnvState{Phase: status.PhaseDeferred, Status: obs}
}

// TestBreakGlassDeferredSkipConfirmation: a skipConfirmation environment's plan deferred by a freeze is
// never pending, and a break-glass names it by the planHash its status shows: kept for that plan at that
// revision (approved already: by skipConfirmation), let through once; a stale planHash, an environment that
// is not deferred (idle, or applying), and a state that cannot be written are refused with nothing kept.
// Once the plan went out, the same plan coming back (the cluster put back) waits again, and a new
// break-glass of it is refused: a break-glass lets a plan through once.
func TestBreakGlassDeferredSkipConfirmation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 24, 16, 0, 0, 0, time.UTC)
	freeze := policy.Windows{Deny: []policy.Window{{Name: "year-end", From: "2026-12-19T00:00:00Z", To: "2027-01-04T08:00:00Z"}}}
	alice := identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: "alice"}}
	store := &memStore{st: deferredState(t, "r1", "sha256:01")}
	gate := &glassBreaker{}
	g := New(Config{Env: "devel", Calendar: calendar(t, freeze), Now: func() time.Time { return now }, Store: store, Gate: gate, Log: logr.Discard()})
	defer g.Stop()

	if _, err := g.BreakGlass(ctx, downStore{}, "sha256:01", approval.Why{By: alice, Reason: "INC-42"}); !errors.Is(err, errDown) || !strings.Contains(err.Error(), "keeping the break-glass of plan sha256:01") {
		t.Errorf("the API server down: %v; want the write's error, named", err)
	}
	for _, tc := range []struct {
		name string
		st   state.EnvState
		hash string
	}{
		{"a stale planHash", deferredState(t, "r1", "sha256:01"), "sha256:00"},
		{"not deferred", func() state.EnvState { s := deferredState(t, "r1", "sha256:01"); s.Phase = status.PhaseIdle; return s }(), "sha256:01"},
		{"applying", func() state.EnvState {
			s := deferredState(t, "r1", "sha256:01")
			s.InFlight = &approval.InFlight{Revision: "r1", PlanHash: "sha256:01"}
			return s
		}(), "sha256:01"},
		{"no status", state.EnvState{Phase: status.PhaseDeferred}, "sha256:01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &memStore{st: tc.st}
			if _, err := g.BreakGlass(ctx, s, tc.hash, approval.Why{By: alice, Reason: "INC-42"}); !errors.As(err, new(*approval.NotPendingError)) {
				t.Errorf("BreakGlass = %v; want NotPending", err)
			}
			if len(s.st.BreakGlass) != 0 {
				t.Errorf("kept %+v", s.st.BreakGlass)
			}
		})
	}

	p, err := g.BreakGlass(ctx, store, "sha256:01", approval.Why{By: alice, Reason: "INC-42"})
	if err != nil || p.PlanHash != "sha256:01" || p.Revision != "r1" || !p.Complete() || p.Approvers()[0] != approval.AutoApprover {
		t.Fatalf("BreakGlass of the deferred plan = %+v, %v; want it, approved by %s", p, err, approval.AutoApprover)
	}
	want := []approval.BreakGlass{{PlanHash: "sha256:01", Revision: "r1", By: "github:alice", Reason: "INC-42", At: now}}
	if diff := cmp.Diff(want, store.st.BreakGlass); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if _, b := g.JudgeFor(&store.st, "sha256:01", "r1"); b == nil {
		t.Fatal("JudgeFor the deferred plan: not let through")
	}
	prop := approval.Proposal{Environment: "devel", Revision: "r1", Plan: &reconcile.Plan{PlanHash: "sha256:01"}}
	if err := g.Through(ctx, prop, want[0]); err != nil {
		t.Fatal(err)
	}

	// It went out; the cluster is put back, and the same plan is deferred again: it waits, and a new
	// break-glass of it is refused.
	if v, b := g.JudgeFor(&store.st, "sha256:01", "r1"); v.Open || b != nil {
		t.Errorf("JudgeFor the plan let through already = %v, %+v; want closed, waiting", v.Open, b)
	}
	_, err = g.BreakGlass(ctx, store, "sha256:01", approval.Why{By: alice, Reason: "INC-43"})
	var re *approval.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "went out through the closed deploy windows of devel already (break-glass by github:alice: INC-42") {
		t.Errorf("a second break-glass of the plan let through = %v; want refused, saying by whom it went out", err)
	}
	if len(store.st.BreakGlass) != 1 || len(gate.heard) != 1 {
		t.Errorf("kept %+v, the gate heard %v; want the one", store.st.BreakGlass, gate.heard)
	}
}
