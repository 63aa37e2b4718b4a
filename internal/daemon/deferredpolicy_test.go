package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestDeferredKeepsApprovalsWhenRequiredRises: a plan approved and deferred by a freeze keeps its
// approvals when approvals.required rises before a restart: it is pending again, counting the approval
// it had (1 of 2), not proposed afresh with none; the second approval defers it again.
func TestDeferredKeepsApprovalsWhenRequiredRises(t *testing.T) {
	h := newHarness(t, "prod")
	h.freeze("prod", time.Now().Add(time.Hour))
	ctx := context.Background()
	r := h.start(WithResync(time.Hour))
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if _, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	r.waitPhase(t, "prod", status.PhaseDeferred)

	r.stop()
	e := h.cfg.Environments["prod"]
	e.Approvals.Required = 2
	h.cfg.Environments["prod"] = e
	r = h.start(WithResync(time.Hour))
	var v status.Environment
	testenv.WaitFor(t, 30*time.Second, "the deferred plan awaiting approval again under approvals.required 2", func() bool {
		v = r.environment(t, "prod")
		return v.Phase == status.PhaseAwaitingApproval
	})
	if v.Pending == nil || v.Pending.PlanHash != p.PlanHash {
		t.Fatalf("after the restart: pending %+v; want the plan approved before", v.Pending)
	}
	if diff := cmp.Diff([]string{"github:alice"}, v.Pending.Approvers()); diff != "" {
		t.Errorf("approvals after approvals.required rose (-want +got):\n%s", diff)
	}
	if v.Pending.Complete() || v.Phase != status.PhaseAwaitingApproval {
		t.Errorf("phase %s, %s; want AwaitingApproval, 1 of 2", v.Phase, v.Pending.Tally())
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("web runs %s inside the freeze", got)
	}
	got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob"))
	if err != nil || !got.Complete() {
		t.Fatalf("bob's approval = %+v, %v; want it complete", got, err)
	}
	r.waitPhase(t, "prod", status.PhaseDeferred)
}
