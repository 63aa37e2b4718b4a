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

// ProposeRelease shows plan p, applied and verified, awaiting its release approval (the approval task after
// the deployment in its stage's sequence) on the plan's check run, stamped as another decision: external_id
// "release:<planHash>" (ReleaseExternalID) and the buttons ActionReleaseApprove and ActionReleaseReject,
// concluded action_required, so that a click, the API and the CLI decide it as they decide a plan before it
// is applied, and a click made for the plan (its payload names the plan's external_id and button) is never
// taken for the release. The run completes once the rest of the sequence has run. since is when the wait
// began: a run moved to in progress after it holds a click on the release, kept while it is decided and
// given its buttons back once it was lost (see Propose). It is idempotent; it creates the run when there is
// none (a skipConfirmation environment's run made before GitHub answered).
func (c *Checks) ProposeRelease(ctx context.Context, p *reconcile.Plan, since time.Time, notes ...string) (int64, error) {
	r, err := c.api.find(ctx, refOf(p))
	if err != nil {
		return 0, err
	}
	id := ReleaseExternalID(p.PlanHash)
	out := c.releaseOutput(p, strings.Join(notes, "\n\n"))
	if r == nil {
		opts := gh.CreateCheckRunOptions{
			Name: approval.CheckName(p.Environment), HeadSHA: p.Revision, ExternalID: gh.String(id),
			Conclusion: gh.String(ConclusionActionRequired), CompletedAt: &gh.Timestamp{Time: c.api.now().UTC().Truncate(time.Second)},
			Output: output(out), Actions: releaseActions(),
		}
		if u := c.api.detailsURL(p.Environment); u != "" {
			opts.DetailsURL = gh.String(u)
		}
		created, err := c.api.create(ctx, opts)
		if err != nil {
			return 0, err
		}
		return created.GetID(), nil
	}
	if awaiting(r) && r.GetExternalID() == id {
		return r.GetID(), nil
	}
	if clicked := r.GetStartedAt().Time; r.GetStatus() == "in_progress" && r.GetExternalID() == id && strings.HasPrefix(r.GetOutput().GetTitle(), releaseClickedTitle) &&
		!clicked.Before(since.Truncate(time.Second)) {
		if c.lostClickAfter <= 0 || c.api.now().Sub(clicked) < c.lostClickAfter {
			return r.GetID(), nil // a click on the release, being decided
		}
		note := fmt.Sprintf("%sLost: “%s” (since %s UTC) never reached the leader; the replica that took the click stopped first. Nothing was released or rejected: decide again.",
			deniedMarker, r.GetOutput().GetTitle(), clicked.UTC().Format("2006-01-02 15:04"))
		out = c.releaseOutput(p, strings.Join(append([]string{note}, notes...), "\n\n"))
	}
	return r.GetID(), c.api.update(ctx, r.GetID(), runUpdate{Conclusion: ConclusionActionRequired, ExternalID: id, Actions: releaseActions(), Output: output(out)})
}

// releaseOutput renders plan p, applied, awaiting its release approval, after note (if any).
func (c *Checks) releaseOutput(p *reconcile.Plan, note string) Output {
	intro := fmt.Sprintf("**Deployed and verified; awaiting release approval.** `%s` runs in **%s**. *Approve* releases it: the rest of "+
		"its sequence runs, and promotion waits for it. *Reject* fails the deploy (rolled back where onFailedRollout says so); %s.",
		short(p.Revision), p.Environment, c.approvers.policyRule(p.Environment))
	if note != "" {
		intro = note + "\n\n" + intro
	}
	out := RenderPlan(p, intro, c.api.detailsURL(p.Environment))
	out.Title = releaseAwaitingTitle
	return out
}

// Titles of a check run awaiting its release approval (a tally follows it when more approvers must approve),
// and of one whose release button was clicked (the handler's; what Propose would take for the plan's own click
// starts otherwise).
const (
	releaseAwaitingTitle = "Deployed; awaiting release approval"
	releaseClickedTitle  = "Release "
)

// clickTitles are the title and summary click k (allowed because why) puts on run while it is decided.
func (c *Checks) clickTitles(run *gh.CheckRun, k click, why string) (string, string) {
	env, reject, login := k.env, k.reject, k.login
	hash, release := decisionOf(run.GetExternalID())
	n := c.approvers.policies[env].Required
	if release {
		switch {
		case reject:
			return releaseClickedTitle + "rejected by " + mention(login) + ", failing the deploy",
				fmt.Sprintf("Release rejected by %s (%s); the deploy fails.", mention(login), why)
		case n > 1:
			return releaseClickedTitle + "approval by " + mention(login) + ", counting",
				fmt.Sprintf("Release approved by %s (%s). Counting it toward the %d approvals planHash `%s` needs.", mention(login), why, n, hash)
		}
		return releaseClickedTitle + "approved by " + mention(login) + ", releasing",
			fmt.Sprintf("Release approved by %s (%s). Running the rest of the sequence of planHash `%s`; results follow here.", mention(login), why, hash)
	}
	switch {
	case reject:
		return "Rejected by " + mention(login) + ", withdrawing", fmt.Sprintf("Rejected by %s (%s); withdrawing the plan.", mention(login), why)
	case n > 1:
		return "Approval by " + mention(login) + ", counting",
			fmt.Sprintf("Approved by %s (%s). Counting it toward the %d approvals planHash `%s` needs.", mention(login), why, n, hash)
	}
	return "Approved by " + mention(login) + ", applying",
		fmt.Sprintf("Approved by %s (%s). Re-planning and applying planHash `%s`; results follow here.", mention(login), why, hash)
}
