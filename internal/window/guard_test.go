package window

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

type memStore struct {
	st     state.EnvState
	writes int
}

func (m *memStore) Update(_ context.Context, _ string, mutate func(*state.EnvState)) error {
	mutate(&m.st)
	m.writes++
	return nil
}

// deferrer is a gate that hears deferrals (the notifications), refusing them with err.
type deferrer struct {
	approval.Gate
	heard []string
	err   error
}

func (d *deferrer) Deferred(_ context.Context, p approval.Proposal, why string) error {
	d.heard = append(d.heard, p.Plan.PlanHash+": "+why)
	return d.err
}

func calendar(t *testing.T, w policy.Windows) *policy.Calendar {
	t.Helper()
	c, err := policy.NewCalendar(w)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestJudgeWithoutWindows(t *testing.T) {
	var nilGuard *Guard
	for name, g := range map[string]*Guard{"no calendar": New(Config{}), "no guard": nilGuard} {
		if v := g.Judge(); !v.Open {
			t.Errorf("%s: closed (%s); want always open", name, v.Message())
		}
		g.Stop()
	}
}

// TestJudgeWakesWhenTheyOpen: windows judged closed wake the worker when
// they open, by a timer; a Stop before then cancels it.
func TestJudgeWakesWhenTheyOpen(t *testing.T) {
	now := time.Now().UTC()
	freeze := policy.Windows{Deny: []policy.Window{{Name: "incident", From: now.Add(-time.Hour).Format(time.RFC3339Nano),
		To: now.Add(50 * time.Millisecond).Format(time.RFC3339Nano)}}}
	g := New(Config{Calendar: calendar(t, freeze), Now: func() time.Time { return time.Now().UTC() }})
	woken := make(chan struct{}, 2)
	g.OnOpen(func() { woken <- struct{}{} })
	if v := g.Judge(); v.Open {
		t.Fatal("judged open inside the freeze")
	}
	g.Judge() // the same opening: one timer
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken when the windows opened")
	}
	if v := g.Judge(); !v.Open {
		t.Errorf("judged closed after the freeze: %s", v.Message())
	}
	if len(woken) != 0 {
		t.Errorf("woken %d more times; want once", len(woken))
	}

	later := policy.Windows{Deny: []policy.Window{{Name: "year-end", From: now.Add(-time.Hour).Format(time.RFC3339Nano),
		To: now.Add(time.Hour).Format(time.RFC3339Nano)}}}
	g = New(Config{Calendar: calendar(t, later), Now: func() time.Time { return time.Now().UTC() }})
	g.Judge()
	g.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		t.Error("a timer is left after Stop")
	}
}

// TestDefer: the Deferred phase is written once, in the pass's state too,
// and the gate that hears deferrals hears it once; a refusal is counted and
// the plan waits all the same.
func TestDefer(t *testing.T) {
	ctx := context.Background()
	for _, refuse := range []bool{false, true} {
		store, gate := &memStore{}, &deferrer{}
		if refuse {
			gate.err = errors.New("slack is down")
		}
		failed := 0
		g := New(Config{Env: "prod", Store: store, Gate: gate, Log: logr.Discard(), GateFailed: func() { failed++ }})
		prop := approval.Proposal{Environment: "prod", Revision: "r1", Plan: &reconcile.Plan{PlanHash: "sha256:01"}}
		v := policy.Verdict{Open: false, Reason: "inside the deny window incident"}
		st := &state.EnvState{Phase: status.PhaseIdle}
		for range 2 {
			if err := g.Defer(ctx, st, prop, v); err != nil {
				t.Fatal(err)
			}
		}
		if store.st.Phase != status.PhaseDeferred || st.Phase != status.PhaseDeferred || store.writes != 1 {
			t.Errorf("phase %q (pass %q) in %d writes; want deferred in 1", store.st.Phase, st.Phase, store.writes)
		}
		if diff := cmp.Diff([]string{"sha256:01: " + v.Message()}, gate.heard); diff != "" {
			t.Errorf("the gate heard (-want +got):\n%s", diff)
		}
		if want := map[bool]int{false: 0, true: 1}[refuse]; failed != want {
			t.Errorf("refuse %v: counted %d failures; want %d", refuse, failed, want)
		}
	}
}

// TestDeferApproved: an approved plan is deferred beside its pending
// record, and the approver's answer says why it waits; a pending record of
// another plan is left alone.
func TestDeferApproved(t *testing.T) {
	ctx := context.Background()
	store := &memStore{st: state.EnvState{Phase: status.PhaseAwaitingApproval, Pending: &approval.Pending{PlanHash: "sha256:01"}}}
	g := New(Config{Env: "prod", Store: store, Gate: approval.Manual(), Log: logr.Discard()})
	p := &approval.Pending{PlanHash: "sha256:01", Reasons: []string{"two approvals"}}
	v := policy.Verdict{Reason: "inside the deny window incident"}
	got, err := g.DeferApproved(ctx, approval.Proposal{Plan: &reconcile.Plan{PlanHash: "sha256:01"}}, p, v)
	if err != nil {
		t.Fatal(err)
	}
	if store.st.Phase != status.PhaseDeferred {
		t.Errorf("phase %q; want deferred", store.st.Phase)
	}
	if diff := cmp.Diff([]string{"two approvals", v.Message()}, got.Reasons); diff != "" {
		t.Errorf("the answer's reasons (-want +got):\n%s", diff)
	}
	if len(p.Reasons) != 1 {
		t.Errorf("the pending record given was changed: %v", p.Reasons)
	}
	store.st.Phase, store.st.Pending.PlanHash = status.PhaseAwaitingApproval, "sha256:02"
	if _, err := g.DeferApproved(ctx, approval.Proposal{Plan: &reconcile.Plan{PlanHash: "sha256:01"}}, p, v); err != nil {
		t.Fatal(err)
	}
	if store.st.Phase != status.PhaseAwaitingApproval {
		t.Errorf("another plan's phase moved to %q", store.st.Phase)
	}
}
