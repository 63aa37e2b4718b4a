package github

import (
	"context"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Identifiers of the check run's action buttons (GitHub: identifier ≤ 20 characters, label ≤ 20,
// description ≤ 40). A plan awaiting approval offers ActionApprove and ActionReject; a plan applied and
// verified awaiting its release approval offers ActionReleaseApprove and ActionReleaseReject, so that a click
// names the decision it was made for (see the Handler).
const (
	ActionApprove        = "approve"
	ActionReject         = "reject"
	ActionReleaseApprove = "release-approve"
	ActionReleaseReject  = "release-reject"
)

// releasePrefix starts the external_id of a check run awaiting a release approval: "release:<planHash>".
// The plan's own decision is external_id "<planHash>"; the release is another decision on the same run,
// and the run is stamped with the release's identifier when its wait begins, so a click made (or replayed)
// for the plan can never be read as one for the release (see mismatch).
const releasePrefix = "release:"

// ReleaseExternalID is the external_id of the check run of planHash while it awaits its release approval.
func ReleaseExternalID(planHash string) string { return releasePrefix + planHash }

// decisionOf reads a check run's external_id: the planHash it decides, and whether the decision is the
// release approval of that plan.
func decisionOf(externalID string) (planHash string, release bool) {
	if h, ok := strings.CutPrefix(externalID, releasePrefix); ok {
		return h, true
	}
	return externalID, false
}

// ofPlan reports whether a check run's external_id is planHash's, for the plan or its release.
func ofPlan(externalID, planHash string) bool {
	h, _ := decisionOf(externalID)
	return planHash != "" && h == planHash
}

// Conclusions Stagehand gives its check runs.
const (
	ConclusionActionRequired = "action_required"
	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionNeutral        = "neutral"
	ConclusionCancelled      = "cancelled"
)

// Checks keeps each plan's check run stagehand/<env> in step with the plan's fate: proposed with its buttons,
// tallied, deferred, applying, finished, rejected, superseded, stale; and the PR previews' runs. It keeps no
// state of its own: the runs on GitHub are found again by commit, name and planHash. Get it with
// Client.Checks.
type Checks struct {
	api            checkRunAPI
	approvers      *Approvers
	lostClickAfter time.Duration
}

func approvalActions() []*gh.CheckRunAction {
	return []*gh.CheckRunAction{
		{Label: "Approve", Description: "Deploy exactly this plan", Identifier: ActionApprove},
		{Label: "Reject", Description: "Do not deploy this plan", Identifier: ActionReject},
	}
}

func releaseActions() []*gh.CheckRunAction {
	return []*gh.CheckRunAction{
		{Label: "Approve", Description: "Release this deploy", Identifier: ActionReleaseApprove},
		{Label: "Reject", Description: "Fail this deploy", Identifier: ActionReleaseReject},
	}
}

// actionsOf are the buttons of the decision run awaits: the release's when its external_id names one.
func actionsOf(run *gh.CheckRun) []*gh.CheckRunAction {
	if _, release := decisionOf(run.GetExternalID()); release {
		return releaseActions()
	}
	return approvalActions()
}

// runUpdate is PATCH check-runs/{id}. Unlike go-github's options it always sends actions, so an empty
// list removes the buttons once a plan is decided.
type runUpdate struct {
	Name        string               `json:"name,omitempty"`
	Status      string               `json:"status,omitempty"`
	Conclusion  string               `json:"conclusion,omitempty"`
	StartedAt   *gh.Timestamp        `json:"started_at,omitempty"`
	CompletedAt *gh.Timestamp        `json:"completed_at,omitempty"`
	DetailsURL  string               `json:"details_url,omitempty"`
	ExternalID  string               `json:"external_id,omitempty"`
	Output      *gh.CheckRunOutput   `json:"output,omitempty"`
	Actions     []*gh.CheckRunAction `json:"actions"`
}

func output(o Output) *gh.CheckRunOutput {
	return &gh.CheckRunOutput{Title: gh.String(o.Title), Summary: gh.String(o.Summary)}
}

func awaiting(r *gh.CheckRun) bool {
	return r.GetStatus() == "completed" && r.GetConclusion() == ConclusionActionRequired
}

// Propose shows plan p on its commit as check run stagehand/<env>, concluded action_required with Approve
// and Reject buttons and external_id = planHash, and returns its id. It is idempotent: a run already
// awaiting approval for the same planHash, or in progress because someone approved it, is kept (a restart
// or a pass after a failed Propose proposes again); one awaiting approval for another planHash
// (cluster drift, a new digest) is completed as neutral and replaced.
//
// The daemon proposes only plans still pending, so a run of p in progress longer than the lost-click
// delay (see WithLostClickAfter) holds a click that never reached the leader: the replica that took it
// stopped first. That run gets its plan and buttons back, saying the approval was lost. notes (a rollback's
// hold or pin, the approvals counted so far) are shown above the plan of a run it creates or gives back.
func (c *Checks) Propose(ctx context.Context, p *reconcile.Plan, notes ...string) (int64, error) {
	name := approval.CheckName(p.Environment)
	runs, err := c.api.list(ctx, p.Revision, name)
	if err != nil {
		return 0, err
	}
	for _, r := range runs {
		if r.GetExternalID() == p.PlanHash && awaiting(r) {
			return r.GetID(), nil
		}
		if r.GetExternalID() == p.PlanHash && r.GetStatus() == "in_progress" {
			since := r.GetStartedAt().Time
			if c.lostClickAfter <= 0 || c.api.now().Sub(since) < c.lostClickAfter {
				return r.GetID(), nil // approved and being decided or applied
			}
			note := fmt.Sprintf("%sLost: “%s” (since %s UTC) never reached the leader; the replica that took the click stopped first. Nothing was applied or withdrawn: decide again.",
				deniedMarker, r.GetOutput().GetTitle(), since.UTC().Format("2006-01-02 15:04"))
			return r.GetID(), c.api.update(ctx, r.GetID(), runUpdate{Conclusion: ConclusionActionRequired, Actions: approvalActions(),
				Output: output(c.awaitingOutput(p, strings.Join(append([]string{note}, notes...), "\n\n")))})
		}
		if !awaiting(r) {
			continue
		}
		if err := c.api.update(ctx, r.GetID(), runUpdate{Conclusion: ConclusionNeutral, Output: output(Output{
			Title:   "Replaced: the plan changed",
			Summary: fmt.Sprintf("The cluster or the registry changed since this plan (`%s`) was made; the new plan `%s` awaits approval in a fresh check run.", r.GetExternalID(), p.PlanHash),
		})}); err != nil {
			return 0, err
		}
	}
	out := c.awaitingOutput(p, strings.Join(notes, "\n\n"))
	opts := gh.CreateCheckRunOptions{
		Name: name, HeadSHA: p.Revision, ExternalID: gh.String(p.PlanHash),
		Conclusion: gh.String(ConclusionActionRequired), CompletedAt: &gh.Timestamp{Time: c.api.now().UTC().Truncate(time.Second)},
		Output: output(out), Actions: approvalActions(),
	}
	if u := c.api.detailsURL(p.Environment); u != "" {
		opts.DetailsURL = gh.String(u)
	}
	r, err := c.api.create(ctx, opts)
	if err != nil {
		return 0, err
	}
	return r.GetID(), nil
}

// awaitingOutput renders plan p awaiting approval, after note (if any).
func (c *Checks) awaitingOutput(p *reconcile.Plan, note string) Output {
	intro := "**Awaiting approval.** *Approve* deploys exactly this plan; " + c.approvers.policyRule(p.Environment) + "."
	if note != "" {
		intro = note + "\n\n" + intro
	}
	return RenderPlan(p, intro, c.api.detailsURL(p.Environment))
}

// Supersede withdraws env's check runs awaiting approval on revision (only the one for planHash, unless
// planHash is "", and that one also when a click moved it to in progress), completing them as neutral: "superseded by <newer>" for a newer commit, "replaced: the
// plan changed" when newer is revision itself, "nothing left to apply" when newer is "".
func (c *Checks) Supersede(ctx context.Context, ref PlanRef, newer string) error {
	env, revision, planHash := ref.Environment, ref.Revision, ref.PlanHash
	runs, err := c.api.list(ctx, revision, approval.CheckName(env))
	if err != nil {
		return err
	}
	out := Output{
		Title:   "Superseded by " + short(newer),
		Summary: fmt.Sprintf("A newer commit of the manifests, %s, supersedes this plan for **%s**; its own check run asks for approval.", newer, env),
	}
	switch newer {
	case "":
		out = Output{Title: "Nothing left to apply", Summary: "The environment **" + env + "** already runs what this plan would deploy, or nothing of it can be applied any more."}
	case revision:
		out = Output{Title: "Replaced: the plan changed", Summary: "The cluster or the registry changed since this plan was made; the new plan awaits approval in a fresh check run."}
	}
	for _, r := range runs {
		mine := ofPlan(r.GetExternalID(), planHash)
		// A run of this plan in progress was clicked (approved) but the plan was withdrawn before it could
		// be applied, e.g. on the leader after the click reached another replica, or queued, approved and
		// deferred to its deploy window: it is superseded too.
		clicked := mine && (r.GetStatus() == "in_progress" || r.GetStatus() == "queued")
		if !clicked && (!awaiting(r) || (planHash != "" && !mine)) {
			continue
		}
		if err := c.api.update(ctx, r.GetID(), runUpdate{Conclusion: ConclusionNeutral, Output: output(out)}); err != nil {
			return err
		}
	}
	return nil
}

// Interrupted notes on plan p's check run that a shutdown cut the apply short; the next leader continues it
// and completes the run.
func (c *Checks) Interrupted(ctx context.Context, p *reconcile.Plan, approver, why string) error {
	r, err := c.api.find(ctx, refOf(p))
	if err != nil || r == nil {
		return err
	}
	return c.api.update(ctx, r.GetID(), runUpdate{Status: "in_progress", Output: output(Output{
		Title:   "Interrupted, continuing",
		Summary: fmt.Sprintf("Approved by %s. The apply was interrupted: %s.", mention(approver), oneLine(why)),
	})})
}

// Applying moves plan p's check run to in progress, "approved by @x" (creating the run for environments
// that skip confirmation, so every deploy shows on its commit). approver "" means applied automatically.
func (c *Checks) Applying(ctx context.Context, p *reconcile.Plan, approver string) error {
	note := "**Applying**, approved by " + mention(approver) + "."
	title := "Approved by " + mention(approver) + ", applying"
	if approver == "" {
		note, title = "**Applying** automatically (skipConfirmation).", "Applying"
	}
	out := RenderPlan(p, note, c.api.detailsURL(p.Environment))
	out.Title = title
	return c.upsert(ctx, p, runUpdate{Status: "in_progress", Output: output(out)})
}

// Deferred shows on plan p's check run that the plan, approved, waits for its environment's deploy
// window: queued, why saying until when ("waiting for the deploy window (inside the deny window year-end):
// opens Mon 4 Jan 2027 08:00 Europe/Berlin"). A plan without a run (one that skips confirmation, whose
// run is made when it is applied) gets none: nothing would complete it if a newer revision replaced it.
func (c *Checks) Deferred(ctx context.Context, p *reconcile.Plan, why string) error {
	r, err := c.api.find(ctx, refOf(p))
	if err != nil || r == nil {
		return err
	}
	out := RenderPlan(p, "**Deferred:** "+why+". It is applied when the window opens.", c.api.detailsURL(p.Environment))
	out.Title = "Deferred: " + why
	return c.api.update(ctx, r.GetID(), runUpdate{Status: "queued", Output: output(out)})
}

// Finished completes the check run of res.Plan as success or failure with per-workload results.
func (c *Checks) Finished(ctx context.Context, res *reconcile.Result, approver string, applyErr error) error {
	conclusion := ConclusionSuccess
	if applyErr != nil || res.Failed() {
		conclusion = ConclusionFailure
	}
	p := res.Plan
	return c.upsert(ctx, p, runUpdate{Conclusion: conclusion, Output: output(RenderResult(res, approver, applyErr, c.api.detailsURL(p.Environment)))})
}

// upsert sets the status (or the conclusion, which completes it) and output of plan p's check run as u says,
// creating the run when there is none (skipConfirmation environments are never proposed).
func (c *Checks) upsert(ctx context.Context, p *reconcile.Plan, u runUpdate) error {
	r, err := c.api.find(ctx, refOf(p))
	if err != nil {
		return err
	}
	if r != nil {
		return c.api.update(ctx, r.GetID(), runUpdate{Status: u.Status, Conclusion: u.Conclusion, Output: u.Output})
	}
	opts := gh.CreateCheckRunOptions{
		Name: approval.CheckName(p.Environment), HeadSHA: p.Revision, ExternalID: gh.String(p.PlanHash), Output: u.Output,
	}
	if u.Status != "" {
		opts.Status = gh.String(u.Status)
	}
	if u.Conclusion != "" {
		opts.Conclusion = gh.String(u.Conclusion)
		opts.CompletedAt = &gh.Timestamp{Time: c.api.now().UTC().Truncate(time.Second)}
	}
	if u := c.api.detailsURL(p.Environment); u != "" {
		opts.DetailsURL = gh.String(u)
	}
	_, err = c.api.create(ctx, opts)
	return err
}

// Rejected completes the check run of ref as cancelled, "rejected by @x".
func (c *Checks) Rejected(ctx context.Context, ref PlanRef, by, reason string) error {
	env, revision := ref.Environment, ref.Revision
	r, err := c.api.find(ctx, ref)
	if err != nil || r == nil {
		return err
	}
	summary := fmt.Sprintf("Rejected by %s; revision %s will not be deployed to **%s**.", mention(by), short(revision), env)
	if reason != "" {
		summary += "\n\n> " + oneLine(reason)
	}
	return c.api.update(ctx, r.GetID(), runUpdate{Conclusion: ConclusionCancelled, Output: output(Output{
		Title: "Rejected by " + mention(by), Summary: summary,
	})})
}

// deniedMarker starts the note an unauthorised click adds to a pending check run's summary.
const deniedMarker = "> ⚠️ "

// Denied records on a pending check run that login clicked a button without the right to: the run stays
// awaiting approval, with its buttons, and its summary now starts with who may approve.
func (c *Checks) Denied(ctx context.Context, run *gh.CheckRun, login, why string) error {
	summary := stripNote(run.GetOutput().GetSummary())
	note := fmt.Sprintf("%s%s may not approve or reject this plan: %s.\n\n", deniedMarker, mention(login), why)
	out := Output{Title: run.GetOutput().GetTitle(), Summary: cut(note+summary, "")}
	if out.Title == "" {
		out.Title = "Awaiting approval"
	}
	return c.api.update(ctx, run.GetID(), runUpdate{Output: output(out), Actions: actionsOf(run)})
}

// stripNote removes an earlier deniedMarker note from a summary.
func stripNote(summary string) string {
	if rest, ok := strings.CutPrefix(summary, deniedMarker); ok {
		if _, after, found := strings.Cut(rest, "\n\n"); found {
			return after
		}
	}
	return summary
}

// Stale completes a check run whose plan can no longer be approved (the planHash changed, or a newer commit
// is pending) as neutral, saying why; the current plan has its own check run.
func (c *Checks) Stale(ctx context.Context, runID int64, why string) error {
	return c.api.update(ctx, runID, runUpdate{Conclusion: ConclusionNeutral, Output: output(Output{
		Title:   "Not applied: the plan is no longer current",
		Summary: "This plan was not applied: " + oneLine(why) + "\n\nThe current plan has its own check run.",
	})})
}

// Preview shows on a pull request's head commit, as neutral check run "stagehand/<env> preview", the plan
// that merging it would produce against the live cluster (or why there is none). Re-running for the same
// commit updates the run in place.
func (c *Checks) Preview(ctx context.Context, headSHA string, pv Preview) error {
	env, p, planErr := pv.Environment, pv.Plan, pv.Err
	name := approval.PreviewName(env)
	var out Output
	if planErr != nil {
		out = Output{Title: "No plan: " + oneLine(planErr.Error()), Summary: "Planning this commit for **" + env + "** failed:\n\n```\n" + planErr.Error() + "\n```\n"}
		if len(out.Title) > 200 {
			out.Title = out.Title[:200]
		}
		out.Summary = cut(out.Summary, "")
	} else {
		out = RenderPlan(p, "**Preview.** Merging this pull request would produce this plan for **"+env+"** against the live cluster.", c.api.detailsURL(env))
	}
	runs, err := c.api.list(ctx, headSHA, name)
	if err != nil {
		return err
	}
	if len(runs) > 0 {
		return c.api.update(ctx, runs[0].GetID(), runUpdate{Conclusion: ConclusionNeutral, Output: output(out)})
	}
	opts := gh.CreateCheckRunOptions{
		Name: name, HeadSHA: headSHA, Conclusion: gh.String(ConclusionNeutral),
		CompletedAt: &gh.Timestamp{Time: c.api.now().UTC().Truncate(time.Second)}, Output: output(out),
	}
	if p != nil {
		opts.ExternalID = gh.String(p.PlanHash)
	}
	_, err = c.api.create(ctx, opts)
	return err
}
