package github

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Deployments is an approval.Gate that decides nothing: it records every apply as a GitHub deployment of
// the applied commit to the environment of the same name, so the repository's Environments view and the
// commit page show what runs where. Add it beside the check-run gate with approval.Gates.
//
// The gate hears of an apply only once it has ended (Completed; skipConfirmation environments included), so
// the deployment and its statuses are written then, in order: the deployment (payload: the plan's changes),
// queued, in_progress, and success, failure or error (interrupted) with auto_inactive, which makes the
// environment's earlier successful deployments inactive. Rejected plans and plans superseded while pending
// were never deployed and leave nothing. A failure to reach GitHub is returned (the worker logs and counts
// it) after the apply has been recorded: it never fails or undoes an apply.
type Deployments struct {
	c   *Client
	cfg config.GitHubDeployments
}

var _ approval.Gate = (*Deployments)(nil)

// NewDeployments returns the deployments gate for client c, with the URL templates of cfg.
func NewDeployments(c *Client, cfg config.GitHubDeployments) *Deployments {
	return &Deployments{c: c, cfg: cfg}
}

// Propose decides nothing: a plan is deployed only once applied.
func (d *Deployments) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, nil
}

// Superseded does nothing: a withdrawn plan was never deployed.
func (d *Deployments) Superseded(context.Context, approval.Proposal, string) error { return nil }

// Completed records an applied plan (succeeded, failed or interrupted) as a deployment with its statuses.
func (d *Deployments) Completed(ctx context.Context, p approval.Proposal, o approval.Outcome) error {
	var final string
	switch o.Result {
	case approval.ResultSucceeded:
		final = "success"
	case approval.ResultFailed:
		final = "failure"
	case approval.ResultInterrupted:
		final = "error"
	default: // rejected: nothing was deployed
		return nil
	}
	plan := p.Plan
	if plan == nil {
		plan = &reconcile.Plan{Environment: p.Environment, Revision: p.Revision}
	}
	approver := o.Approver
	who := "approved by @" + approver
	if approver == approval.AutoApprover || approver == "" {
		who = "skipConfirmation"
	}
	req := &gh.DeploymentRequest{
		Ref:              gh.String(p.Revision),
		Task:             gh.String("deploy"),
		Environment:      gh.String(p.Environment),
		AutoMerge:        gh.Bool(false),
		RequiredContexts: &[]string{},
		Payload:          deploymentPayload(plan, approver),
		Description:      gh.String(clip(fmt.Sprintf("Stagehand: %d change(s), %s", len(plan.Changes), who))),
	}
	dep, _, err := d.c.rest.Repositories.CreateDeployment(ctx, d.c.owner, d.c.repo, req)
	if err != nil {
		return fmt.Errorf("creating the GitHub deployment of %s to %s: %w", short(p.Revision), p.Environment, err)
	}
	message := o.Message
	if message == "" {
		message = map[string]string{"success": "Applied and rolled out", "failure": "Failed", "error": "Interrupted"}[final]
	}
	steps := []struct{ state, description string }{
		{"queued", "Approved: " + who},
		{"in_progress", fmt.Sprintf("Applying %d change(s)", len(plan.Changes))},
		{final, message},
	}
	for _, s := range steps {
		sr := &gh.DeploymentStatusRequest{
			State:        gh.String(s.state),
			Description:  gh.String(clip(s.description)),
			Environment:  gh.String(p.Environment),
			AutoInactive: gh.Bool(true),
		}
		if u := d.cfg.EnvironmentURL; u != "" {
			sr.EnvironmentURL = gh.String(config.ExpandURLTemplate(u, p.Environment, p.Revision))
		}
		if u := d.cfg.LogURL; u != "" {
			sr.LogURL = gh.String(config.ExpandURLTemplate(u, p.Environment, p.Revision))
		}
		if _, _, err := d.c.rest.Repositories.CreateDeploymentStatus(ctx, d.c.owner, d.c.repo, dep.GetID(), sr); err != nil {
			return fmt.Errorf("setting GitHub deployment %d of %s to %s %s: %w", dep.GetID(), short(p.Revision), p.Environment, s.state, err)
		}
	}
	return nil
}

// MaxPayloadBytes bounds the JSON payload of a deployment: the plan's changes are cut to fit, with a note.
// GitHub documents no limit but refuses large payloads; a plan is read in full on the check run and in
// the reconciler's history.
const MaxPayloadBytes = 32 << 10

// payload is what a deployment carries: the plan that was applied.
type payload struct {
	PlanHash string             `json:"planHash"`
	Approver string             `json:"approver,omitempty"`
	Changes  []reconcile.Change `json:"changes"`
	// Omitted counts the changes left out to keep the payload under MaxPayloadBytes.
	Omitted int    `json:"omitted,omitempty"`
	Note    string `json:"note,omitempty"`
}

// deploymentPayload is plan's payload, its changes cut (halving) until it fits MaxPayloadBytes.
func deploymentPayload(plan *reconcile.Plan, approver string) payload {
	pl := payload{PlanHash: plan.PlanHash, Approver: approver, Changes: plan.Changes}
	if pl.Changes == nil {
		pl.Changes = []reconcile.Change{}
	}
	for n := len(plan.Changes); ; n /= 2 {
		pl.Changes = pl.Changes[:n]
		pl.Omitted = len(plan.Changes) - n
		pl.Note = ""
		if pl.Omitted > 0 {
			pl.Note = fmt.Sprintf("%d of %d changes omitted to fit GitHub's payload limit; the check run and the reconciler's history list them all",
				pl.Omitted, len(plan.Changes))
		}
		b, err := json.Marshal(pl)
		if (err == nil && len(b) <= MaxPayloadBytes) || n == 0 {
			return pl
		}
	}
}

// clip shortens s to GitHub's 140-character limit on deployment status descriptions.
func clip(s string) string {
	const limit = 140
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}
