package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// memStore is one environment's state in memory.
type memStore struct{ st state.EnvState }

func (m *memStore) Load(context.Context, string) (*state.EnvState, error) {
	cp := m.st
	return &cp, nil
}

func (m *memStore) Update(_ context.Context, _ string, mutate func(*state.EnvState)) error {
	mutate(&m.st)
	return nil
}

// gate refuses every report while down, and records what it took.
type gate struct {
	approval.Gate
	mu   sync.Mutex
	down bool
	took []string
}

func (g *gate) answer(what string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return errors.New("502 Bad Gateway")
	}
	g.took = append(g.took, what)
	return nil
}

func (g *gate) Superseded(_ context.Context, p approval.Proposal, by string) error {
	return g.answer("superseded " + p.Plan.PlanHash + " by " + by)
}

func (g *gate) Completed(_ context.Context, p approval.Proposal, o approval.Outcome) error {
	return g.answer("completed " + p.Plan.PlanHash + " " + o.Result)
}

// counter counts what the queue tells the metrics.
type counter struct{ waiting, dropped, stateFailed, gateFailed int }

func (c *counter) Waiting(n int) { c.waiting = n }
func (c *counter) Dropped()      { c.dropped++ }
func (c *counter) Failed(gate bool) {
	if gate {
		c.gateFailed++
		return
	}
	c.stateFailed++
}

func prop(i int) approval.Proposal {
	return approval.Proposal{Environment: "prod", Revision: "r", Plan: &reconcile.Plan{Environment: "prod", PlanHash: fmt.Sprintf("sha256:%02d", i)}}
}

func kept(st state.EnvState) []string {
	var out []string
	for _, u := range st.Unreported {
		out = append(out, fmt.Sprintf("%s %s %d", u.Kind, u.PlanHash(), u.Attempts))
	}
	return out
}

// TestQueueBounded: at most MaxKept wait (the oldest go), a refused one
// goes to the back, one refused MaxAttempts times is given up, each taken
// one is removed; a Completed keeps its plan once. It starts nothing.
func TestQueueBounded(t *testing.T) {
	ctx := context.Background()
	store, g, c := &memStore{}, &gate{down: true}, &counter{}
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	q := New(Config{Env: "prod", Store: store, Gate: g, Counter: c, Now: func() time.Time { return now }, Log: logr.Discard(),
		Backoff: time.Second, BackoffMax: 4 * time.Second})
	for i := range MaxKept + 1 {
		p := prop(i)
		q.Owe(ctx, Completed(p, approval.Outcome{Result: approval.ResultSucceeded, Apply: &reconcile.Result{Plan: p.Plan}}), errors.New("502"))
	}
	q.Owe(ctx, Superseded(prop(50), "r2"), errors.New("502"))
	want := []string{"completed sha256:02 1", "completed sha256:03 1", "completed sha256:04 1", "completed sha256:05 1",
		"completed sha256:06 1", "completed sha256:07 1", "completed sha256:08 1", "superseded sha256:50 1"}
	if diff := cmp.Diff(want, kept(store.st)); diff != "" {
		t.Fatalf("kept (-want +got):\n%s", diff)
	}
	if store.st.Unreported[0].Outcome.Apply.Plan != nil {
		t.Error("the plan is kept twice (in the outcome's apply too)")
	}
	if c.dropped != 2 || c.waiting != MaxKept {
		t.Errorf("counted %d dropped, %d waiting; want 2, %d", c.dropped, c.waiting, MaxKept)
	}

	// Not due yet: nothing is reported.
	q.ReportDue(ctx)
	if c.gateFailed != 0 {
		t.Fatalf("reported %d times before its backoff ended", c.gateFailed)
	}
	// One has failed all but its last attempt: the next refusal gives it up, and the others wait.
	store.st.Unreported[0].Attempts = MaxAttempts - 1
	now = now.Add(time.Second)
	q.ReportDue(ctx)
	if len(store.st.Unreported) != MaxKept-1 || store.st.Unreported[0].Attempts != 1 || c.dropped != 3 {
		t.Fatalf("after a refused report: %v, %d dropped; want 7 left, none tried again, 3 dropped", kept(store.st), c.dropped)
	}
	// The next refused goes to the back of the queue.
	q.Report(ctx)
	last := store.st.Unreported[len(store.st.Unreported)-1]
	if last.PlanHash() != "sha256:03" || last.Attempts != 2 || last.LastError != "502 Bad Gateway" {
		t.Fatalf("after a second refused report: %v; want sha256:03 last, tried twice", kept(store.st))
	}

	g.down = false
	q.Report(ctx)
	if len(store.st.Unreported) != 0 || len(g.took) != MaxKept-1 || c.waiting != 0 {
		t.Fatalf("after the gate answered: %v left, %d taken, %d waiting; want none left, 7 taken", kept(store.st), len(g.took), c.waiting)
	}
	if g.took[0] != "completed sha256:04 succeeded" {
		t.Errorf("first taken: %q; want sha256:04 (the oldest left)", g.took[0])
	}
	q.Report(ctx) // nothing left: reports nothing again
	if len(g.took) != MaxKept-1 {
		t.Errorf("reported %d; want nothing more", len(g.took)-(MaxKept-1))
	}
}

// TestSchedule: the wait doubles per failed attempt up to BackoffMax, and
// Note makes what another process left be reported at once.
func TestSchedule(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {10, 5 * time.Second}} {
		t.Run(fmt.Sprint(tc.attempts), func(t *testing.T) {
			q := New(Config{Now: func() time.Time { return now }, Backoff: time.Second, BackoffMax: 5 * time.Second})
			q.schedule(tc.attempts)
			if got := q.at.Sub(now); got != tc.want {
				t.Errorf("after %d attempts the next report is in %s; want %s", tc.attempts, got, tc.want)
			}
		})
	}
	c := &counter{}
	q := New(Config{Counter: c, Now: func() time.Time { return now }})
	q.Note(&state.EnvState{Unreported: []state.Unreported{{Kind: KindSuperseded}}})
	if !q.at.Equal(now) || c.waiting != 1 {
		t.Errorf("after Note: due at %v, %d waiting; want now, 1", q.at, c.waiting)
	}
	q.Note(&state.EnvState{})
	if !q.at.IsZero() {
		t.Errorf("after Note of none: due at %v; want never", q.at)
	}
}
