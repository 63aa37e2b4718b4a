package daemon

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// recordingGate leaves plans pending and records what it hears.
type recordingGate struct {
	mu        sync.Mutex
	proposed  int
	completed []approval.Outcome
}

func (g *recordingGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.proposed++
	return approval.Decision{}, nil
}

func (g *recordingGate) Superseded(context.Context, approval.Proposal, string) error { return nil }

func (g *recordingGate) Completed(_ context.Context, _ approval.Proposal, o approval.Outcome) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.completed = append(g.completed, o)
	return nil
}

// TestHandedOverApprovalThatFailsIsReported: an approval handed over by another replica that the leader
// cannot carry out (here: the manifest cannot be resolved when re-planning) is not only logged: the gate
// hears it failed with nothing applied (GitHub shows it on the check run), the plan stays pending, and the
// next pass proposes it again.
func TestHandedOverApprovalThatFailsIsReported(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	h := newHarness(t, "prod")
	gate := &recordingGate{}
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(env.Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()))},
		WithGate(gate))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil {
		t.Fatalf("prod pending after one pass: %+v, %v", st, err)
	}
	pending := *st.Pending
	// The newest revision is unchanged, but its files cannot be resolved any more.
	d.snaps.keep(gitsource.Snapshot{Revision: pending.Revision, FS: fstest.MapFS{}, Time: time.Now()})
	if _, err := d.handOver(ctx, "prod", pass.Decision{Approve: true, PlanHash: pending.PlanHash, Who: ghUser("maria")}); err != nil {
		t.Fatal(err)
	}
	w := d.workers["prod"]
	w.desk.PickUp(ctx)

	if len(gate.completed) != 1 || gate.completed[0].Result != approval.ResultFailed || gate.completed[0].Approver != "github:maria" ||
		gate.completed[0].Apply != nil || !strings.Contains(gate.completed[0].Message, "approving failed, nothing was applied") {
		t.Errorf("gate heard %+v, want one failed outcome approved by maria with nothing applied", gate.completed)
	}
	st, err = d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil || st.Pending.PlanHash != pending.PlanHash || len(st.Handovers) != 0 || len(st.History) != 0 {
		t.Errorf("state after the failed approval: %+v, %v; want the plan still pending, no hand-over, no history", st, err)
	}
	if prop := (approval.Proposal{Revision: pending.Revision, Plan: &reconcile.Plan{PlanHash: pending.PlanHash}}); !w.tell.Due(prop) {
		t.Errorf("the failed plan is remembered as proposed: it would not be proposed again")
	}
}

// TestApprovalPlansOnce: approving a pending plan plans once, inside the reconciler's Apply (which still
// refuses a changed planHash), not also before it in decide and again for the status after it (the
// worker used to plan three times per click). The worker's Plan and Apply are wrapped to count them.
func TestApprovalPlansOnce(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "prod")
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0))})
	if err != nil {
		t.Fatal(err)
	}
	w := d.workers["prod"]
	var plans, applies atomic.Int64
	w.reconciler = countingReconciler{Reconciler: w.reconciler, plans: &plans, applies: &applies}
	w.apply.Reconciler = w.reconciler // the applier applies through it
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil {
		t.Fatalf("prod pending after one pass: %+v, %v", st, err)
	}
	plans.Store(0)
	// Not leading (Once does not lead): the approval goes through the Store, as from another replica.
	if _, err := d.Approve(ctx, "prod", st.Pending.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	w.desk.PickUp(ctx)
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:1.0.0" {
		t.Fatalf("prod runs %s after the approval, want web:1.0.0", got)
	}
	if p, a := plans.Load(), applies.Load(); p != 0 || a != 1 {
		t.Errorf("the approval planned %d times besides %d Apply (which plans once), want 0 and 1", p, a)
	}
	v, err := d.Environment(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.History) != 1 || v.History[0].Result != approval.ResultSucceeded || len(v.Services) != 1 ||
		v.Services[0].Targets[0].State != status.StateInSync || v.PlanHash != "" {
		t.Errorf("after the apply: history %+v, status %+v; want one success and web in sync with no plan left", v.History, v.Observation)
	}
}

// countingReconciler counts the Plans and Applies of the reconciler it wraps.
type countingReconciler struct {
	pass.Reconciler
	plans, applies *atomic.Int64
}

func (c countingReconciler) Plan(ctx context.Context, req reconcile.Request) (*reconcile.Plan, error) {
	c.plans.Add(1)
	return c.Reconciler.Plan(ctx, req)
}

func (c countingReconciler) Apply(ctx context.Context, req reconcile.Request, hash string, opts ...reconcile.Option) (*reconcile.Result, error) {
	c.applies.Add(1)
	return c.Reconciler.Apply(ctx, req, hash, opts...)
}
