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
// When the apply is under way (approval.Starter's Started; skipConfirmation environments included) it
// creates the deployment (payload: the plan's changes) with statuses queued and in_progress; when it ends
// (Completed) it adds success, failure or error (interrupted) with auto_inactive, which makes the
// environment's earlier successful deployments inactive. It keeps no state: Completed finds the deployment
// Started made on GitHub (same commit, environment and planHash, still queued or in progress), so a restart
// loses nothing, and creates the whole sequence when Started could not. Rejected plans and plans superseded
// while pending were never deployed and leave nothing. Errors talking to GitHub are returned (the worker
// logs and counts them); they never fail or undo an apply.
type Deployments struct {
	c   *Client
	cfg config.GitHubDeployments
}

var (
	_ approval.Gate    = (*Deployments)(nil)
	_ approval.Starter = (*Deployments)(nil)
)

// NewDeployments returns the deployments gate for client c, with the URL templates of cfg.
func NewDeployments(c *Client, cfg config.GitHubDeployments) *Deployments {
	return &Deployments{c: c, cfg: cfg}
}

// Propose decides nothing: a plan is deployed only once applied. A plan applied and verified that waits for
// its release approval (p.Release set; the apply's deployment is still open) says so on its deployment, once:
// a status in_progress, releaseWaiting, so that the Environments view does not show it applying for as long as
// nobody decides. (Without an open deployment, Started failed: Completed makes the whole sequence.)
func (d *Deployments) Propose(ctx context.Context, p approval.Proposal) (approval.Decision, error) {
	if p.Release.IsZero() {
		return approval.Decision{}, nil
	}
	id, latest, err := d.findOpen(ctx, p.Environment, p.Revision, planOf(p).PlanHash)
	if err != nil || id == 0 || latest == releaseWaiting {
		return approval.Decision{}, err
	}
	return approval.Decision{}, d.status(ctx, deployment{id, p.Environment, p.Revision}, "in_progress", releaseWaiting)
}

// releaseWaiting is the description of an open deployment waiting for its release approval.
const releaseWaiting = "Deployed and verified; waiting for the release approval"

// Superseded does nothing: a withdrawn plan was never deployed.
func (d *Deployments) Superseded(context.Context, approval.Proposal, string) error { return nil }

// Started creates the deployment of an apply under way, queued then in progress; when one is open for
// the same plan already (a process continuing an apply another began), it is left as it is.
func (d *Deployments) Started(ctx context.Context, p approval.Proposal, approver string) error {
	plan := planOf(p)
	open, _, err := d.findOpen(ctx, p.Environment, p.Revision, plan.PlanHash)
	if err != nil || open != 0 {
		return err
	}
	_, err = d.start(ctx, p, approver)
	return err
}

// Completed reports the end of an applied plan (succeeded, failed or interrupted) on its deployment.
func (d *Deployments) Completed(ctx context.Context, p approval.Proposal, o approval.Outcome) error {
	final := map[string]string{approval.ResultSucceeded: "success", approval.ResultFailed: "failure",
		approval.ResultInterrupted: "error", approval.ResultRolledBack: "failure"}[o.Result]
	if final == "" { // rejected: nothing was deployed
		return nil
	}
	plan := planOf(p)
	id, _, err := d.findOpen(ctx, p.Environment, p.Revision, plan.PlanHash)
	if err != nil {
		return err
	}
	if id == 0 { // Started failed: the whole sequence now
		if id, err = d.start(ctx, p, o.Approver); err != nil {
			return err
		}
	}
	message := o.Message
	if message == "" {
		message = map[string]string{"success": "Applied and rolled out", "failure": "Failed", "error": "Interrupted"}[final]
	}
	return d.status(ctx, deployment{id, p.Environment, p.Revision}, final, message)
}

// deployment is one GitHub deployment: its id, and the environment and commit it deploys.
type deployment struct {
	id            int64
	env, revision string
}

// start creates the deployment of p's plan with its queued and in_progress statuses, and returns its id.
func (d *Deployments) start(ctx context.Context, p approval.Proposal, approver string) (int64, error) {
	env, revision, plan := p.Environment, p.Revision, planOf(p)
	who := "approved by " + mention(approver)
	if approval.IsAuto(approver) || approver == "" {
		who = "skipConfirmation"
	}
	req := &gh.DeploymentRequest{
		Ref:              gh.String(revision),
		Task:             gh.String(deployTask),
		Environment:      gh.String(env),
		AutoMerge:        gh.Bool(false),
		RequiredContexts: &[]string{},
		Payload:          deploymentPayload(plan, approver),
		Description:      gh.String(clip(fmt.Sprintf("Stagehand: %d change(s), %s", len(plan.Changes), who))),
	}
	dep, _, err := d.c.rest.Repositories.CreateDeployment(ctx, d.c.owner, d.c.repo, req)
	if err != nil {
		return 0, fmt.Errorf("creating the GitHub deployment of %s to %s: %w", short(revision), env, err)
	}
	started := deployment{dep.GetID(), env, revision}
	if err := d.status(ctx, started, "queued", "Approved: "+who); err != nil {
		return 0, err
	}
	return dep.GetID(), d.status(ctx, started, "in_progress", fmt.Sprintf("Applying %d change(s)", len(plan.Changes)))
}

// status adds a status to deployment dep, with the configured URLs.
func (d *Deployments) status(ctx context.Context, dep deployment, state, description string) error {
	id, env, revision := dep.id, dep.env, dep.revision
	sr := &gh.DeploymentStatusRequest{
		State:        gh.String(state),
		Description:  gh.String(clip(description)),
		Environment:  gh.String(env),
		AutoInactive: gh.Bool(true),
	}
	if u := d.cfg.EnvironmentURL; u != "" {
		sr.EnvironmentURL = gh.String(config.ExpandURLTemplate(u, env, revision))
	}
	if u := d.cfg.LogURL; u != "" {
		sr.LogURL = gh.String(config.ExpandURLTemplate(u, env, revision))
	}
	if _, _, err := d.c.rest.Repositories.CreateDeploymentStatus(ctx, d.c.owner, d.c.repo, id, sr); err != nil {
		return fmt.Errorf("setting GitHub deployment %d of %s to %s %s: %w", id, short(revision), env, state, err)
	}
	return nil
}

// findOpen returns the newest deployment of revision to env for planHash whose latest status is queued or
// in_progress, and that status's description; or 0.
func (d *Deployments) findOpen(ctx context.Context, env, revision, planHash string) (int64, string, error) {
	deps, _, err := d.c.rest.Repositories.ListDeployments(ctx, d.c.owner, d.c.repo, &gh.DeploymentsListOptions{
		SHA: revision, Environment: env, Task: deployTask, ListOptions: gh.ListOptions{PerPage: 100}})
	if err != nil {
		return 0, "", fmt.Errorf("listing the GitHub deployments of %s to %s: %w", short(revision), env, err)
	}
	for _, dep := range deps { // newest first
		var pl payload
		if json.Unmarshal(dep.Payload, &pl) != nil || pl.PlanHash != planHash {
			continue
		}
		sts, _, err := d.c.rest.Repositories.ListDeploymentStatuses(ctx, d.c.owner, d.c.repo, dep.GetID(), &gh.ListOptions{PerPage: 1})
		if err != nil {
			return 0, "", fmt.Errorf("reading the statuses of GitHub deployment %d: %w", dep.GetID(), err)
		}
		if len(sts) > 0 && (sts[0].GetState() == "queued" || sts[0].GetState() == "in_progress") {
			return dep.GetID(), sts[0].GetDescription(), nil
		}
	}
	return 0, "", nil
}

// deployTask is the task of Stagehand's deployments.
const deployTask = "deploy"

func planOf(p approval.Proposal) *reconcile.Plan {
	if p.Plan == nil {
		return &reconcile.Plan{Environment: p.Environment, Revision: p.Revision}
	}
	return p.Plan
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
