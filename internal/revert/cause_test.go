package revert

import (
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestCause: a failed workload rolls back; so does a failed test,
// evaluation or rejected release after something was applied; a blocked
// workload alone, an apply that succeeded, or a failure with nothing
// applied does not.
func TestCause(t *testing.T) {
	changes := &reconcile.Plan{Changes: []reconcile.Change{{Service: "web"}}}
	failedRollout := &reconcile.Result{Workloads: []reconcile.WorkloadResult{{Outcome: reconcile.OutcomeFailed}}}
	patched := &reconcile.Result{Workloads: []reconcile.WorkloadResult{{Outcome: reconcile.OutcomeSucceeded}}}
	blocked := &reconcile.Result{Workloads: []reconcile.WorkloadResult{{Outcome: reconcile.OutcomeBlocked}}}
	failed := approval.Outcome{Result: approval.ResultFailed, Message: "boom"}
	seqFailed := approval.Outcome{Result: approval.ResultFailed, Message: "task test failed", Sequence: promote.ResultFail}
	for _, tc := range []struct {
		name     string
		plan     *reconcile.Plan
		out      approval.Outcome
		res      *reconcile.Result
		rejected string
		want     string
	}{
		{name: "rollout failed", plan: changes, out: failed, res: failedRollout, want: "rollout failed: boom"},
		{name: "succeeded", plan: changes, out: approval.Outcome{Result: approval.ResultSucceeded}, res: patched},
		{name: "blocked alone", plan: changes, out: failed, res: blocked},
		{name: "verification failed", plan: changes, out: seqFailed, res: patched, want: "verification failed: task test failed"},
		{name: "verification failed, continued", plan: changes, out: seqFailed, want: "verification failed: task test failed"},
		{name: "nothing applied", plan: &reconcile.Plan{}, out: seqFailed},
		{name: "release rejected", plan: changes, out: seqFailed, res: patched, rejected: "rejected by github:bob: not today",
			want: "release rejected by github:bob: not today"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Cause(approval.Proposal{Plan: tc.plan}, tc.out, tc.res, tc.rejected)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Cause = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
