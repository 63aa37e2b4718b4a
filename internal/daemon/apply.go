package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// runFrom runs the pass's steps from first on over p.
func (w *worker) runFrom(ctx context.Context, p *pass, first stepName) error {
	all := w.passSteps()
	for i, s := range all {
		if s.name == first {
			return w.runSteps(ctx, p, all[i:])
		}
	}
	return nil
}

// approvedProposal is prop with the plan resumed was approved as: its
// planHash and changes (prop's plan holds what is left of them).
func approvedProposal(prop approval.Proposal, resumed *approval.InFlight) (approval.Proposal, error) {
	var changes []reconcile.Change
	if err := json.Unmarshal(resumed.Changes, &changes); err != nil {
		return prop, fmt.Errorf("decoding the changes of the interrupted apply %s: %w", resumed.PlanHash, err)
	}
	plan := *prop.Plan
	plan.PlanHash, plan.Changes = resumed.PlanHash, changes
	prop.Plan = &plan
	return prop, nil
}

// appliedPlan is res's plan once res succeeded: its changes are live.
func appliedPlan(res *reconcile.Result) *reconcile.Plan {
	p := *res.Plan
	p.Unchanged += len(p.Changes)
	p.Changes = nil
	p.PlanHash = reconcile.Hash(p.Environment, p.Revision, nil)
	return &p
}

// outcome is how an apply ended: out says who approved it, when it started
// and when it finished; res and err are pkg/reconcile's answer, interrupted
// whether a shutdown cut it short.
func outcome(out approval.Outcome, res *reconcile.Result, err error, interrupted bool) approval.Outcome {
	out.Apply, out.Result = res, approval.ResultSucceeded
	switch {
	case interrupted:
		out.Result, out.Message = approval.ResultInterrupted, "shut down during the apply; the next leader plans again and applies what is left"
	case err != nil:
		out.Result, out.Message = approval.ResultFailed, err.Error()
	case res.Failed():
		out.Result, out.Message = approval.ResultFailed, failureSummary(res)
	case res.Plan != nil && len(res.Plan.UnreachableTargets()) > 0:
		// What the services need in a target that did not answer is
		// unknown: the environment is not deployed, however well the
		// other targets went.
		out.Result, out.Message = approval.ResultFailed, unreachableSummary(res)
	}
	return out
}

// unreachableSummary says which targets an otherwise successful apply could
// not reach, and why.
func unreachableSummary(res *reconcile.Result) string {
	applied := 0
	for _, wr := range res.Workloads {
		if wr.Outcome != reconcile.OutcomeFailed && wr.Outcome != reconcile.OutcomeBlocked {
			applied++
		}
	}
	var why []string
	for _, t := range res.Plan.UnreachableTargets() {
		for _, pr := range res.Plan.Problems {
			if pr.Unreachable && pr.Target == t {
				why = append(why, pr.Message)
				break
			}
		}
	}
	return fmt.Sprintf("%d workload(s) deployed, but its services were not planned in %d target(s): %s", applied, len(why), approval.JoinMax(why, 5))
}

// graceful is ctx, but cancelled only grace after ctx ends, so that patches
// in flight finish and the state is recorded; at once when ctx ended because
// this replica lost its Lease (lease.ErrLost): another replica may be
// applying already, and no patch may follow.
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			cancel()
			return
		}
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(gctx, func() { t.Stop() })
	})
	return gctx, func() { stop(); cancel() }
}
