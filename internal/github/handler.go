package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// ErrNotPending is matched (errors.Is) by a Decider's error when the plan a button was clicked for is not
// the environment's pending plan any more (its planHash changed, or a newer commit superseded it).
var ErrNotPending = errors.New("plan is not pending")

// Decider takes approval decisions for pending plans; the daemon implements it. Approve must re-plan and
// apply only when planHash is still the pending plan of the newest commit; otherwise it returns an error
// matching ErrNotPending.
type Decider interface {
	Approve(ctx context.Context, env, planHash, approver string) error
	Reject(ctx context.Context, env, planHash, approver, reason string) error
}

// Previewer plans the environments of the manifests on branch headRef, at commit headSHA, against the live
// clusters, for PR previews (BranchPreviewer). A plan error for one environment is reported in its preview.
type Previewer interface {
	Preview(ctx context.Context, headRef, headSHA string) ([]Preview, error)
}

// Preview is one environment's plan for a PR preview.
type Preview struct {
	Environment string
	Plan        *reconcile.Plan
	Err         error
}

// Handler reacts to GitHub webhooks; register HandleCheckRun for check_run and HandlePullRequest for
// pull_request on the webhook receiver (which verifies signatures, dedupes deliveries and caps bodies).
type Handler struct {
	client    *Client
	decider   Decider
	previewer Previewer
	base      string // manifests branch: PRs into it get previews
}

// NewHandler returns a handler deciding through d. previewer may be nil (no PR previews); base is the
// branch the reconciler follows.
func NewHandler(c *Client, d Decider, previewer Previewer, base string) *Handler {
	return &Handler{client: c, decider: d, previewer: previewer, base: base}
}

// HandleCheckRun handles a check_run delivery. Only requested_action on a stagehand/<env> run of the
// configured repository matters: the sender's permission is checked; an unauthorised click leaves the run
// pending and says who may approve; Approve asks the Decider (which re-plans and applies only an unchanged
// plan of the newest commit) and moves the run to in progress; Reject completes it as cancelled.
func (h *Handler) HandleCheckRun(ctx context.Context, payload []byte) error {
	var ev gh.CheckRunEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("decoding check_run event: %w", err)
	}
	if ev.GetAction() != "requested_action" || !strings.EqualFold(ev.GetRepo().GetFullName(), h.client.Repo()) {
		return nil
	}
	run := ev.GetCheckRun()
	env, ok := EnvOfCheck(run.GetName())
	if !ok {
		return nil
	}
	if id := run.GetApp().GetID(); h.client.appID != 0 && id != 0 && id != h.client.appID {
		return nil // a run of the same name made by another app is not ours to decide
	}
	action := ev.GetRequestedAction().Identifier
	if (action != ActionApprove && action != ActionReject) || !awaiting(run) {
		return nil // not our button, or a click from a stale page on a run already decided or withdrawn
	}
	login := ev.GetSender().GetLogin()
	d, err := h.client.MayApprove(ctx, login)
	if err != nil {
		return fmt.Errorf("checking whether %s may approve %s: %w", login, env, err)
	}
	if !d.Allowed {
		return h.client.Denied(ctx, run, login, d.Why)
	}
	hash := run.GetExternalID()
	if action == ActionReject {
		err := h.decider.Reject(ctx, env, hash, login, "rejected on GitHub")
		if errors.Is(err, ErrNotPending) {
			return h.client.Stale(ctx, run.GetID(), err.Error())
		}
		if err != nil {
			return fmt.Errorf("rejecting %s plan %s: %w", env, hash, err)
		}
		return h.client.Rejected(ctx, env, run.GetHeadSHA(), hash, login, "")
	}
	// In progress first: the apply may finish (and complete the run) before Approve returns.
	if err := h.client.update(ctx, run.GetID(), runUpdate{Status: "in_progress", Output: output(Output{
		Title:   "Approved by " + mention(login) + ", applying",
		Summary: fmt.Sprintf("Approved by %s (%s). Re-planning and applying planHash `%s`; results follow here.", mention(login), d.Why, hash),
	})}); err != nil {
		return err
	}
	err = h.decider.Approve(ctx, env, hash, login)
	if errors.Is(err, ErrNotPending) {
		return h.client.Stale(ctx, run.GetID(), err.Error())
	}
	if err != nil {
		// Put the buttons back so the approval can be retried.
		note := fmt.Sprintf("%sApproving failed, nothing was applied: %s. Try again.\n\n", deniedMarker, oneLine(err.Error()))
		uerr := h.client.update(ctx, run.GetID(), runUpdate{Conclusion: ConclusionActionRequired, Actions: approvalActions(),
			Output: output(Output{Title: run.GetOutput().GetTitle(), Summary: cut(note+stripNote(run.GetOutput().GetSummary()), "")})})
		return errors.Join(fmt.Errorf("approving %s plan %s: %w", env, hash, err), uerr)
	}
	return nil
}

// HandlePullRequest handles a pull_request delivery: when a PR into the followed branch of the configured
// repository is opened, synchronized or reopened, each environment's plan for its head is shown as a
// neutral preview check run on the head commit.
func (h *Handler) HandlePullRequest(ctx context.Context, payload []byte) error {
	if h.previewer == nil {
		return nil
	}
	var ev gh.PullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("decoding pull_request event: %w", err)
	}
	switch ev.GetAction() {
	case "opened", "synchronize", "reopened":
	default:
		return nil
	}
	pr := ev.GetPullRequest()
	if !strings.EqualFold(ev.GetRepo().GetFullName(), h.client.Repo()) || (h.base != "" && pr.GetBase().GetRef() != h.base) {
		return nil
	}
	// Pull requests from forks are not previewed: their branches are not in the manifests repository.
	if !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), h.client.Repo()) {
		return nil
	}
	head := pr.GetHead().GetSHA()
	previews, err := h.previewer.Preview(ctx, pr.GetHead().GetRef(), head)
	if err != nil {
		return fmt.Errorf("planning PR #%d head %s: %w", pr.GetNumber(), short(head), err)
	}
	var errs []error
	for _, p := range previews {
		if err := h.client.Preview(ctx, p.Environment, head, p.Plan, p.Err); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
