package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// downGate refuses every report while down, and records those it takes.
type downGate struct {
	mu         sync.Mutex
	down       bool
	completed  []string // planHash result
	superseded []string // planHash by
}

func (g *downGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, nil
}

func (g *downGate) Superseded(_ context.Context, p approval.Proposal, by string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return errors.New("502 Bad Gateway")
	}
	g.superseded = append(g.superseded, p.Plan.PlanHash+" "+by)
	return nil
}

func (g *downGate) Completed(_ context.Context, p approval.Proposal, o approval.Outcome) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return errors.New("502 Bad Gateway")
	}
	if o.Apply != nil && (o.Apply.Plan == nil || o.Apply.Plan.PlanHash != p.Plan.PlanHash) {
		return fmt.Errorf("outcome of %s reports the apply of plan %+v", p.Plan.PlanHash, o.Apply.Plan)
	}
	g.completed = append(g.completed, p.Plan.PlanHash+" "+o.Result)
	return nil
}

// TestUnreportedBounded: outcomes the gate refuses are kept in the state, at most outbox.MaxKept (the
// oldest go), each tried at most outbox.MaxAttempts times, a refused one going to the back of the queue;
// once the gate answers, each kept one is
// reported once (a completed one with the plan its apply names) and removed.
func TestUnreportedBounded(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "prod")
	gate := &downGate{down: true}
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()))},
		WithGate(gate), WithOutcomeRetry(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	w := d.workers["prod"]
	prop := func(i int) approval.Proposal {
		return approval.Proposal{Environment: "prod", Revision: "r", Plan: &reconcile.Plan{Environment: "prod", PlanHash: fmt.Sprintf("sha256:%02d", i)}}
	}
	for i := range outbox.MaxKept + 1 {
		p := prop(i)
		w.tell.Completed(ctx, p, approval.Outcome{Result: approval.ResultSucceeded, Apply: &reconcile.Result{Plan: p.Plan}})
	}
	w.owed.Owe(ctx, outbox.Superseded(prop(50), "r2"), errors.New("502 Bad Gateway"))
	st, err := d.store.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, u := range st.Unreported {
		kept = append(kept, u.Kind+" "+u.PlanHash())
		if u.Kind == outbox.KindCompleted && u.Outcome.Apply.Plan != nil {
			t.Errorf("the plan of %s is kept twice (in the outcome's apply too)", u.PlanHash())
		}
	}
	want := []string{"completed sha256:02", "completed sha256:03", "completed sha256:04", "completed sha256:05",
		"completed sha256:06", "completed sha256:07", "completed sha256:08", "superseded sha256:50"}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Fatalf("kept (-want +got):\n%s", diff)
	}

	// One has failed all but its last attempt: the next refusal gives it up.
	if err := d.store.Update(ctx, "prod", func(st *state.EnvState) { st.Unreported[0].Attempts = outbox.MaxAttempts - 1 }); err != nil {
		t.Fatal(err)
	}
	w.owed.Report(ctx)
	st, err = d.store.Load(ctx, "prod")
	if err != nil || len(st.Unreported) != outbox.MaxKept-1 || st.Unreported[0].Attempts != 1 {
		t.Fatalf("after a refused report: %+v, %v; want 7 left, the others not tried again (the first was refused)", st.Unreported, err)
	}
	// The next refused goes to the back of the queue.
	w.owed.Report(ctx)
	st, err = d.store.Load(ctx, "prod")
	if err != nil || len(st.Unreported) != outbox.MaxKept-1 || st.Unreported[len(st.Unreported)-1].PlanHash() != "sha256:03" ||
		st.Unreported[len(st.Unreported)-1].Attempts != 2 || st.Unreported[len(st.Unreported)-1].LastError != "502 Bad Gateway" {
		t.Fatalf("after a second refused report: %+v, %v; want sha256:03 last, tried twice", st.Unreported, err)
	}

	gate.mu.Lock()
	gate.down = false
	gate.mu.Unlock()
	w.owed.Report(ctx)
	w.owed.Report(ctx) // nothing left: reports nothing again
	st, err = d.store.Load(ctx, "prod")
	if err != nil || len(st.Unreported) != 0 {
		t.Fatalf("after GitHub answered: %+v, %v; want nothing left", st.Unreported, err)
	}
	if got := metricValue(t, d.metrics, "stagehand_outcome_reports_dropped_total", "environment=prod"); got != 3 {
		t.Errorf("stagehand_outcome_reports_dropped_total = %v, want 3 (two pushed out, one given up)", got)
	}
	if got := metricValue(t, d.metrics, "stagehand_outcome_reports_unreported", "environment=prod"); got != 0 {
		t.Errorf("stagehand_outcome_reports_unreported = %v, want 0", got)
	}
	wantCompleted := []string{"sha256:04 succeeded", "sha256:05 succeeded", "sha256:06 succeeded",
		"sha256:07 succeeded", "sha256:08 succeeded", "sha256:03 succeeded"}
	if diff := cmp.Diff(wantCompleted, gate.completed); diff != "" {
		t.Errorf("completed reported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sha256:50 r2"}, gate.superseded); diff != "" {
		t.Errorf("superseded reported (-want +got):\n%s", diff)
	}
}
