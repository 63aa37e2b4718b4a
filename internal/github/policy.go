package github

import (
	"context"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// policyRule says env's whole approval rule in words, for the check run: who may approve, how many must,
// and whether authors are kept out. "approving prod needs membership of acme/sre; 2 distinct approvers;
// the authors of the commits deployed may not approve".
func (a *Approvers) policyRule(env string) string {
	s := a.ApproverRule(env)
	p := a.policies[env]
	if p.Required > 1 {
		s += fmt.Sprintf("; %d distinct approvers must approve this same plan", p.Required)
	}
	if p.ForbidAuthors {
		s += "; the authors of the commits deployed may not approve (four-eyes)"
	}
	return s
}

// Tally shows on plan p's check run how many of the required approvals it has: "1 of 2 approvals:
// @alice", with the Approve and Reject buttons still offered (the run is completed as action_required
// again if a click had moved it to in progress). A plan without a run awaiting or in progress (already
// applied, withdrawn) is left alone.
func (c *Checks) Tally(ctx context.Context, p *reconcile.Plan, approvers []string, required int) error {
	return c.tally(ctx, p, approvals{by: approvers, required: required})
}

// approvals are those a plan has (by), of how many it needs; release when they are for its release.
type approvals struct {
	by       []string
	required int
	release  bool
}

// tally is Tally, on a plan awaiting its release approval when a.release is set.
func (c *Checks) tally(ctx context.Context, p *reconcile.Plan, a approvals) error {
	approvers, required, release := a.by, a.required, a.release
	r, err := c.api.find(ctx, refOf(p))
	if err != nil || r == nil {
		return err
	}
	if !awaiting(r) && r.GetStatus() != "in_progress" {
		return nil
	}
	names := make([]string, len(approvers))
	for i, a := range approvers {
		names[i] = mention(a)
	}
	tally := approval.Tally(names, required)
	note := fmt.Sprintf("%s**%s.** %d more must approve this plan.", deniedMarker, tally, max(required-len(approvers), 0))
	out := c.awaitingOutput(p, note)
	out.Title = "Awaiting approval: " + tally
	u := runUpdate{Conclusion: ConclusionActionRequired, Actions: approvalActions()}
	if release {
		out = c.releaseOutput(p, note)
		out.Title = releaseAwaitingTitle + ": " + tally
		u.ExternalID, u.Actions = ReleaseExternalID(p.PlanHash), releaseActions()
	}
	u.Output = output(out)
	return c.api.update(ctx, r.GetID(), u)
}

// Tally shows the approvals of a plan that needs more than one on its check run (see Checks.Tally).
func (g *Gate) Tally(ctx context.Context, p approval.Proposal, approvers []string, required int) error {
	if p.Plan == nil {
		return nil
	}
	return g.c.checks.tally(ctx, p.Plan, approvals{by: approvers, required: required, release: !p.Release.IsZero()})
}

var _ approval.Tallier = (*Gate)(nil)
