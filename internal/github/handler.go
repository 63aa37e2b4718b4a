package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v60/github"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

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
	decider   approval.Decider
	previewer Previewer
	base      string // manifests branch: PRs into it get previews
	o         options

	decisions sync.WaitGroup // decisions running after their webhook was answered
	previews  *previewQueue  // nil without a previewer
}

// NewHandler returns a handler deciding through d; base is the branch the reconciler follows. Of the
// options, WithPreviewer (PR previews; none without it), OnDecisionError and WithDecisionTimeout concern the
// handler; the decision timeout must stay below the client's WithLostClickAfter.
func NewHandler(c *Client, d approval.Decider, base string, opts ...Option) (*Handler, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring GitHub webhook handler: %w", err)
	}
	if c.checks.lostClickAfter <= o.decisionTimeout {
		return nil, fmt.Errorf("configuring GitHub webhook handler: the decision timeout (%s) must be shorter than the client's lost-click delay (%s)",
			o.decisionTimeout, c.checks.lostClickAfter)
	}
	h := &Handler{client: c, decider: d, previewer: o.previewer, base: base, o: o}
	if o.previewer != nil {
		h.previews = newPreviewQueue(o.previewer, c.checks.Preview, o.preview)
	}
	return h, nil
}

// Wait waits for the decisions and the PR previews still running after their webhooks were answered (at
// shutdown, after StopPreviews, and in tests).
func (h *Handler) Wait() {
	h.decisions.Wait()
	if h.previews != nil {
		h.previews.wait()
	}
}

// StopPreviews drops the PR previews waiting and cancels the running ones (at shutdown); later
// pull_request deliveries are ignored.
func (h *Handler) StopPreviews() {
	if h.previews != nil {
		h.previews.shutdown()
	}
}

// Collectors returns the preview queue's metrics to register: stagehand_github_preview_queue_depth and
// stagehand_github_previews_dropped_total (none without a previewer).
func (h *Handler) Collectors() []prometheus.Collector {
	if h.previews == nil {
		return nil
	}
	return []prometheus.Collector{h.previews.depth, h.previews.dropped}
}

// HandleCheckRun handles a check_run delivery (see HandleCheckRunDelivery) without its delivery ID: only
// its body is recorded as handled.
func (h *Handler) HandleCheckRun(ctx context.Context, payload []byte) error {
	return h.HandleCheckRunDelivery(ctx, "", payload)
}

// HandleCheckRunDelivery handles check_run delivery id (X-GitHub-Delivery). Only requested_action on a
// stagehand/<env> run of the configured repository matters. The click must be for the decision the run
// awaits now: the payload's external_id and button must be the live run's (a plan's "<planHash>" and
// Approve/Reject, or its release's "release:<planHash>" and the release buttons), so a plan click replayed
// during the release wait decides nothing. The sender's permission is checked then: an unauthorised click
// leaves the run pending and says who may approve. When the Decider is also an approval.Deliveries, an
// authorised click is then recorded in the state every replica shares, and one whose ID or body was
// recorded before (a redelivery, the same click delivered to the other replica or after a restart, a
// captured body sent again under another ID) is ignored. A click recorded moves the run to in progress and
// is answered at once (GitHub gives up on a webhook after 10 seconds); the decision runs after that (see
// decide), and its outcome, errors included, lands on the check run.
func (h *Handler) HandleCheckRunDelivery(ctx context.Context, id string, payload []byte) error {
	var ev gh.CheckRunEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("decoding check_run event: %w", err)
	}
	if ev.GetAction() != "requested_action" || !strings.EqualFold(ev.GetRepo().GetFullName(), h.client.Repo()) {
		return nil
	}
	run := ev.GetCheckRun()
	env, ok := approval.EnvOfCheck(run.GetName())
	if !ok {
		return nil
	}
	if id := run.GetApp().GetID(); h.client.appID != 0 && id != 0 && id != h.client.appID {
		return nil // a run of the same name made by another app is not ours to decide
	}
	ra := ev.GetRequestedAction()
	if ra == nil {
		return fmt.Errorf("check_run requested_action delivery for run %d: %w", run.GetID(), ErrNoRequestedAction)
	}
	b, ok := buttons[ra.Identifier]
	if !ok || !awaiting(run) {
		return nil // not our button, or a click from a stale page on a run already decided or withdrawn
	}
	// The payload is only what the sender says: the run as GitHub holds it now decides. It must be
	// our App's, our check, on the same commit, still offering the buttons, and awaiting the decision the
	// click was made for; its external_id (not the payload's) is the planHash decided, which binds
	// environment and revision, so the Decider accepts it only for the plan pending now at that revision.
	live, err := h.client.checks.api.get(ctx, run.GetID())
	if err != nil {
		return fmt.Errorf("reading check run %d before deciding: %w", run.GetID(), err)
	}
	k := click{env: env, login: ev.GetSender().GetLogin(), button: b}
	if why := mismatch(live, run, k, h.client.appID); why != "" {
		// Stale, replayed or forged: nothing to decide, but said, so that whoever
		// clicked, or watches the logs, can learn why nothing happened.
		h.o.onError(fmt.Errorf("ignoring a click on check run %d by %s: %s", run.GetID(), ev.GetSender().GetLogin(), why))
		return nil
	}
	run = live
	login := k.login
	if identity.Reserved(login) { // nothing such a login decides may be read as Stagehand's own
		return h.client.checks.Denied(ctx, run, login, identity.ReservedRule)
	}
	d, err := h.client.approvers.MayApprove(ctx, env, login)
	if err != nil {
		return fmt.Errorf("checking whether %s may approve %s: %w", login, env, err)
	}
	if !d.Allowed {
		return h.client.checks.Denied(ctx, run, login, d.Why)
	}
	// Recorded before anything is decided: of the same click delivered twice (to both replicas, again
	// after a restart, its body under another ID), one goes on.
	dl, record := h.decider.(approval.Deliveries)
	sum := sha256.Sum256(payload)
	delivery := approval.Delivery{ID: id, Sum: hex.EncodeToString(sum[:])}
	if record {
		first, err := dl.FirstDelivery(ctx, delivery)
		if err != nil {
			return fmt.Errorf("recording delivery %q of a click on check run %d: %w", id, run.GetID(), err)
		}
		if !first {
			h.o.onError(fmt.Errorf("ignoring a click on check run %d by %s: delivery %q (or its body) was handled before", run.GetID(), login, id))
			return nil
		}
	}
	title, summary := h.client.checks.clickTitles(run, k, d.Why)
	// In progress first: the apply may finish (and complete the run) before Approve returns, and the buttons
	// go, so a second click cannot start a second decision.
	// started_at marks the click: a run left in progress long after it, with its plan still pending, lost
	// its click (see Client.Propose).
	now := &gh.Timestamp{Time: h.client.Now().UTC().Truncate(time.Second)}
	if err := h.client.checks.api.update(ctx, run.GetID(), runUpdate{Status: "in_progress", StartedAt: now, Output: output(Output{Title: title, Summary: summary})}); err != nil {
		if record {
			// Nothing changed: the same click (the same body) may come again.
			err = errors.Join(err, dl.ForgetDelivery(context.WithoutCancel(ctx), delivery))
		}
		return err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.o.decisionTimeout)
	h.decisions.Add(1)
	go func() {
		defer h.decisions.Done()
		defer cancel()
		if err := h.decide(dctx, run, k); err != nil {
			h.o.onError(err)
		}
	}()
	return nil
}

// button is what a check run action identifier asks for.
type button struct{ reject, release bool }

// click is one press of a button of env's check run, by login.
type click struct {
	env, login string
	button
}

var buttons = map[string]button{
	ActionApprove:        {},
	ActionReject:         {reject: true},
	ActionReleaseApprove: {release: true},
	ActionReleaseReject:  {reject: true, release: true},
}

// decide asks the Decider to approve or reject (reject) the plan of run, after its webhook was answered. A
// plan that is no longer pending completes the run as neutral; any other failure puts the buttons back with
// the error, so the approval can be retried. It returns the decision's error and any error updating the run.
func (h *Handler) decide(ctx context.Context, run *gh.CheckRun, k click) error {
	env, reject, login := k.env, k.reject, k.login
	hash, _ := decisionOf(run.GetExternalID())
	// The click's sender is a GitHub user, verified by the webhook's signature: github:<login>.
	who := identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: login}}
	var err error
	if reject {
		_, err = h.decider.Reject(ctx, env, hash, approval.Why{By: who, Reason: "rejected on GitHub"})
	} else {
		_, err = h.decider.Approve(ctx, env, hash, who)
	}
	var refused *approval.RefusedError
	switch {
	case errors.Is(err, approval.ErrNotPending):
		return h.client.checks.Stale(ctx, run.GetID(), err.Error())
	case errors.As(err, &refused):
		// The policy keeps this person from approving this plan (four-eyes): said on the run, which keeps
		// its buttons for someone else; nothing was counted.
		note := fmt.Sprintf("%s%s may not approve this plan: %s.\n\n", deniedMarker, mention(login), oneLine(refused.Reason))
		return h.client.checks.api.update(ctx, run.GetID(), runUpdate{Conclusion: ConclusionActionRequired, Actions: actionsOf(run),
			Output: output(Output{Title: run.GetOutput().GetTitle(), Summary: cut(note+stripNote(run.GetOutput().GetSummary()), "")})})
	case err != nil:
		verb := "Approving"
		if reject {
			verb = "Rejecting"
		}
		note := fmt.Sprintf("%s%s failed, nothing was applied: %s. Try again.\n\n", deniedMarker, verb, oneLine(err.Error()))
		uerr := h.client.checks.api.update(ctx, run.GetID(), runUpdate{Conclusion: ConclusionActionRequired, Actions: actionsOf(run),
			Output: output(Output{Title: run.GetOutput().GetTitle(), Summary: cut(note+stripNote(run.GetOutput().GetSummary()), "")})})
		return errors.Join(fmt.Errorf("%s %s plan %s: %w", strings.ToLower(verb), env, hash, err), uerr)
	}
	// Done: the worker that carries the decision out (the leader's, after a hand-over) reports its outcome,
	// a rejection included, through the Gate's Completed.
	return nil
}

// HandlePullRequest handles a pull_request delivery: when a PR into the followed branch of the configured
// repository is opened, synchronized or reopened, the preview of its head is queued (see previewQueue):
// each environment's plan for the head is shown as a neutral preview check run on the head commit, after
// the webhook was answered. When it closes, its queued or running preview goes and its branch's cache is
// removed. When it was merged, OnMerged hears of it first.
func (h *Handler) HandlePullRequest(ctx context.Context, payload []byte) error {
	if h.previews == nil && h.o.onMerged == nil {
		return nil
	}
	var ev gh.PullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return fmt.Errorf("decoding pull_request event: %w", err)
	}
	action := ev.GetAction()
	switch action {
	case "opened", "synchronize", "reopened", "closed":
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
	if action == "closed" && pr.GetMerged() && h.o.onMerged != nil {
		if err := h.o.onMerged(ctx, pr.GetNumber(), pr.GetHead().GetRef()); err != nil {
			return fmt.Errorf("pull request #%d merged: %w", pr.GetNumber(), err)
		}
	}
	if h.previews == nil {
		return nil
	}
	if action == "closed" {
		h.previews.closed(pr.GetNumber(), pr.GetHead().GetRef())
		return nil
	}
	h.previews.enqueue(previewJob{pr: pr.GetNumber(), ref: pr.GetHead().GetRef(), sha: pr.GetHead().GetSHA(), updated: pr.GetUpdatedAt().Time})
	return nil
}

// ErrNoRequestedAction is returned for a requested_action delivery without
// its requested_action (the webhook receiver refuses it with 400 first).
var ErrNoRequestedAction = errors.New("requested_action is missing")

// mismatch says why live, the check run as GitHub holds it now, may not be decided on for the clicked run
// from a delivery of click k on a button of the release (k.release) or of the plan; "" when it may: made by
// our App (appID, when known), named for k.env, on the delivery's commit, still awaiting a decision, and the
// decision the click was made for (the same external_id, and a button of that decision).
func mismatch(live, clicked *gh.CheckRun, k click, appID int64) string {
	env, release := k.env, k.release
	_, liveRelease := decisionOf(live.GetExternalID())
	switch {
	case appID != 0 && live.GetApp().GetID() != appID:
		return "made by another App"
	case live.GetName() != approval.CheckName(env):
		return "not the check " + approval.CheckName(env)
	case live.GetHeadSHA() != clicked.GetHeadSHA():
		return "on another commit"
	case live.GetExternalID() == "":
		return "no planHash"
	case !awaiting(live):
		return "no longer awaiting a decision"
	case live.GetExternalID() != clicked.GetExternalID():
		return fmt.Sprintf("the click was for decision %q, the run awaits %q now", clicked.GetExternalID(), live.GetExternalID())
	case release != liveRelease:
		return fmt.Sprintf("a button of another decision than %q", live.GetExternalID())
	}
	return ""
}
