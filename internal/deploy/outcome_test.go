package deploy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestOutcome: how an apply's result becomes the history's result. An apply
// whose plan could not read a target is not a success, however well the
// other targets went; an ordinary problem (a service without a workload)
// does not make it fail.
func TestOutcome(t *testing.T) {
	patched := []reconcile.WorkloadResult{{WorkloadKey: reconcile.WorkloadKey{Target: "a", Kind: "Deployment", Name: "api"}, Outcome: reconcile.OutcomePatched}}
	unreachable := reconcile.Problem{Service: "api", Target: "b", Message: "target b unreachable since 2026-11-24T05:00:00Z: connection refused", Unreachable: true}
	tests := []struct {
		name        string
		res         *reconcile.Result
		err         error
		interrupted bool
		result      string
		message     []string
	}{
		{name: "all applied", res: &reconcile.Result{Plan: &reconcile.Plan{}, Workloads: patched}, result: approval.ResultSucceeded},
		{name: "an ordinary problem", res: &reconcile.Result{Plan: &reconcile.Plan{Problems: []reconcile.Problem{{Service: "web", Target: "a", Message: "no workload"}}}, Workloads: patched},
			result: approval.ResultSucceeded},
		{name: "a target unreachable", res: &reconcile.Result{Plan: &reconcile.Plan{Problems: []reconcile.Problem{unreachable, unreachable}}, Workloads: patched},
			result: approval.ResultFailed, message: []string{"1 workload(s) deployed", "not planned in 1 target(s)", "target b unreachable since 2026-11-24T05:00:00Z"}},
		{name: "apply error", res: nil, err: errors.New("stale plan"), result: approval.ResultFailed, message: []string{"stale plan"}},
		{name: "interrupted", res: &reconcile.Result{Plan: &reconcile.Plan{Problems: []reconcile.Problem{unreachable}}}, interrupted: true, result: approval.ResultInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			out := outcome(approval.Outcome{Approver: "alice", Started: now, Finished: now}, tt.res, tt.err, tt.interrupted)
			if out.Result != tt.result {
				t.Fatalf("result %q (%s), want %q", out.Result, out.Message, tt.result)
			}
			for _, m := range tt.message {
				if !strings.Contains(out.Message, m) {
					t.Errorf("message %q does not say %q", out.Message, m)
				}
			}
		})
	}
}
