package deploy

import (
	"encoding/json"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

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

func failureSummary(res *reconcile.Result) string {
	var msgs []string
	for _, wr := range res.Workloads {
		if wr.Outcome == reconcile.OutcomeFailed || wr.Outcome == reconcile.OutcomeBlocked {
			msgs = append(msgs, fmt.Sprintf("%s %s: %s", wr.WorkloadKey, wr.Outcome, wr.Message))
		}
	}
	return fmt.Sprint(len(msgs), " workload(s) not deployed: ", approval.JoinMax(msgs, 5))
}

// entryOf is prop's history entry for out, with m, the manifest resolved at its revision.
func entryOf(prop approval.Proposal, out approval.Outcome, m *approval.Manifest) approval.Entry {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: pass.ChangesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m}
	if out.Apply != nil {
		e.Workloads, _ = json.Marshal(out.Apply.Workloads) // plain strings and numbers
	}
	return e
}
