package envresource

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestEvents: what the gate and the sequences tell, and what a write
// changed, becomes Events on the object in order; a plan the object showed
// pending before the write is not told again; the reconciler's own apply
// lock is not a Locked Event; an approval task after the deployment is a
// release.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	plan := &reconcile.Plan{PlanHash: "sha256:" + rev, Changes: []reconcile.Change{{Service: "web", To: "r/web:1.1.0"}, {Service: "web", Target: "b", To: "r/web:1.1.0"}}}
	prop := approval.Proposal{Environment: "prod", Revision: rev, Plan: plan}
	pending := &Pending{PlanHash: plan.PlanHash, Revision: rev, Required: 2}
	ref := objectRef("ns", "prod", "uid-1")
	seq := func(task, result string) sequence.Event {
		return sequence.Event{Environment: "prod", Kind: sequence.KindFinished, Task: task,
			Data: sequence.Data{Revision: rev, Result: result, Message: "ok", Approver: "github:carol"}}
	}
	tests := []struct {
		name       string
		do         func(e *Events)
		prev, next *Status
		want       []string
	}{{
		name: "a plan proposed, written",
		do:   func(e *Events) { _, _ = e.Propose(ctx, prop) },
		prev: &Status{}, next: &Status{Pending: pending},
		want: []string{"Normal PlanProposed plan sha256:0123456789ab of revision 0123456789ab awaits approval: web → 1.1.0"},
	}, {
		name: "the same plan proposed again, nothing written",
		do:   func(e *Events) { _, _ = e.Propose(ctx, prop) },
		prev: &Status{Pending: pending}, next: &Status{Pending: pending},
	}, {
		name: "an approval of two, then the second as the apply starts",
		do:   func(e *Events) { _ = e.Started(ctx, prop, "github:alice, github:bob") },
		prev: &Status{Pending: pending}, next: &Status{Pending: &Pending{PlanHash: plan.PlanHash, Revision: rev, Required: 2, Approvals: 1, Approvers: []string{"github:alice"}}},
		want: []string{
			"Normal Approved plan sha256:0123456789ab of revision 0123456789ab approved by github:alice (1 of 2)",
			"Normal Approved plan sha256:0123456789ab of revision 0123456789ab approved by github:alice, github:bob",
			"Normal ApplyStarted applying plan sha256:0123456789ab of revision 0123456789ab (approved by github:alice, github:bob): web → 1.1.0",
		},
	}, {
		name: "skipConfirmation: no approval told",
		do:   func(e *Events) { _ = e.Started(ctx, prop, approval.AutoApprover) },
		prev: &Status{}, next: &Status{},
		want: []string{"Normal ApplyStarted applying plan sha256:0123456789ab of revision 0123456789ab (approved by stagehand:skipConfirmation): web → 1.1.0"},
	}, {
		name: "outcomes",
		do: func(e *Events) {
			_ = e.Completed(ctx, prop, approval.Outcome{Result: approval.ResultFailed, Message: "rollout timed out"})
			_ = e.Completed(ctx, prop, approval.Outcome{Result: approval.ResultRejected, Approver: "github:bob", Message: "not today"})
			_ = e.Completed(ctx, prop, approval.Outcome{Result: approval.ResultRolledBack, Message: "smoke failed"})
			_ = e.Superseded(ctx, prop, "fedcba9876543210")
		},
		prev: &Status{}, next: &Status{},
		want: []string{
			"Warning ApplyFailed plan sha256:0123456789ab of revision 0123456789ab failed: rollout timed out",
			"Warning Rejected plan sha256:0123456789ab of revision 0123456789ab rejected by github:bob: not today",
			"Warning RolledBack plan sha256:0123456789ab of revision 0123456789ab rolled back: smoke failed",
			"Normal Superseded plan sha256:0123456789ab of revision 0123456789ab superseded by revision fedcba987654",
		},
	}, {
		name: "verifications and a release",
		do: func(e *Events) {
			e.SequenceEvent(ctx, seq(promote.TaskApproval, promote.ResultPass)) // before the deployment: the plan's approval
			e.SequenceEvent(ctx, seq(promote.TaskDeployment, promote.ResultPass))
			e.SequenceEvent(ctx, seq(promote.TaskTest, promote.ResultPass))
			e.SequenceEvent(ctx, seq(promote.TaskEvaluation, promote.ResultFail))
			e.SequenceEvent(ctx, seq(promote.TaskApproval, promote.ResultPass))
		},
		prev: &Status{}, next: &Status{},
		want: []string{
			"Normal Verified test of revision 0123456789ab: pass: ok",
			"Warning VerificationFailed evaluation of revision 0123456789ab: fail: ok",
			"Normal Released revision 0123456789ab released by github:carol",
		},
	}, {
		name: "a plan deferred to its deploy window, told once",
		do: func(e *Events) {
			for range 2 { // deferred again after a restart
				_ = e.Deferred(ctx, prop, "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin")
			}
		},
		prev: &Status{}, next: &Status{},
		want: []string{"Normal Deferred plan sha256:0123456789ab of revision 0123456789ab deferred: waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"},
	}, {
		name: "a plan let through the freeze by a break-glass",
		do: func(e *Events) {
			_ = e.BrokeGlass(ctx, prop, approval.BreakGlass{PlanHash: plan.PlanHash, Revision: rev, By: "github:alice", Reason: "INC-42: payments down"})
		},
		prev: &Status{}, next: &Status{},
		want: []string{"Warning BreakGlass plan sha256:0123456789ab of revision 0123456789ab goes out through the closed deploy windows: break-glass by github:alice: INC-42: payments down"},
	}, {
		name: "locks by people placed and lifted, the apply lock not",
		prev: &Status{Locks: []Lock{{Path: "apps/prod", Type: "freeze", Author: "github:carol"}}},
		next: &Status{Locks: []Lock{{Path: "apps/prod/a", Type: "deploy", Author: "stagehand:reconciler"}, {Path: "apps/prod/web", Type: "incident", Author: "github:dave"}}},
		want: []string{"Normal Locked incident lock at apps/prod/web placed by github:dave", "Normal Unlocked freeze lock at apps/prod (github:carol) lifted"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(32)
			e := NewEvents(rec)
			if tt.do != nil {
				tt.do(e)
			}
			e.emit("prod", ref, tt.prev, tt.next)
			close(rec.Events)
			var got []string
			for s := range rec.Events {
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}
