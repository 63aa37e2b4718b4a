package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// startingGate is a recordingGate that is also an approval.Starter: its Started is slow and notes whether
// the apply was in flight when it was called.
type startingGate struct {
	recordingGate
	store *state.Store
	heard []string
}

func (g *startingGate) Started(ctx context.Context, p approval.Proposal, approver string) error {
	st, err := g.store.Load(ctx, p.Environment)
	inFlight := err == nil && st.InFlight != nil && st.InFlight.PlanHash == p.Plan.PlanHash
	time.Sleep(300 * time.Millisecond) // GitHub is slow: Completed must still come after
	g.mu.Lock()
	defer g.mu.Unlock()
	if inFlight {
		g.heard = append(g.heard, "started by "+approver+" while in flight")
	} else {
		g.heard = append(g.heard, "started by "+approver+" but not in flight")
	}
	return nil
}

func (g *startingGate) Completed(ctx context.Context, p approval.Proposal, o approval.Outcome) error {
	g.mu.Lock()
	g.heard = append(g.heard, "completed "+o.Result)
	g.mu.Unlock()
	return g.recordingGate.Completed(ctx, p, o)
}

// TestStarterHearsTheApplyUnderWay: a gate that is an approval.Starter hears Started while the apply is in
// flight, once, and Completed only after Started has returned, however slow it is.
func TestStarterHearsTheApplyUnderWay(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "prod")
	gate := &startingGate{}
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0))}, WithGate(gate))
	if err != nil {
		t.Fatal(err)
	}
	gate.store = d.store
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil {
		t.Fatalf("prod pending after one pass: %+v, %v", st, err)
	}
	if _, err := d.Approve(ctx, "prod", st.Pending.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	d.workers["prod"].desk.PickUp(ctx)
	gate.mu.Lock()
	defer gate.mu.Unlock()
	want := []string{"started by github:alice while in flight", "completed succeeded"}
	if diff := cmp.Diff(want, gate.heard); diff != "" {
		t.Errorf("the gate heard (-want +got):\n%s", diff)
	}
}

var _ approval.Starter = (*startingGate)(nil)
