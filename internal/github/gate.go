package github

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Gate is the GitHub check-run approval gate: it shows each proposed plan as check run stagehand/<env> on
// its commit and keeps that run in step with the plan's fate. Approvals arrive through the Handler
// (check_run webhooks), which calls an approval.Decider. It keeps no state of its own: the check runs on
// GitHub are found again by commit, name and planHash, so a restart loses nothing.
type Gate struct{ c *Client }

var (
	_ approval.Gate     = (*Gate)(nil)
	_ approval.Deferrer = (*Gate)(nil)
)

// NewGate returns the gate for client c.
func NewGate(c *Client) *Gate { return &Gate{c: c} }

// Propose creates (or, after a restart, finds) the check run awaiting approval and leaves the plan pending.
func (g *Gate) Propose(ctx context.Context, p approval.Proposal) (approval.Decision, error) {
	if !p.Release.IsZero() {
		if _, err := g.c.checks.ProposeRelease(ctx, p.Plan, p.Release, p.Notes...); err != nil {
			return approval.Decision{}, rateLimited(err, g.c.Now())
		}
		return approval.Decision{}, nil
	}
	if _, err := g.c.checks.Propose(ctx, p.Plan, p.Notes...); err != nil {
		return approval.Decision{}, rateLimited(err, g.c.Now())
	}
	return approval.Decision{}, nil
}

// Deferred shows on the plan's run that it waits for its deploy window.
func (g *Gate) Deferred(ctx context.Context, p approval.Proposal, why string) error {
	return g.c.checks.Deferred(ctx, p.Plan, why)
}

// Superseded completes the withdrawn plan's run as neutral (superseded by a newer commit, replaced by a
// changed plan, or nothing left to apply).
func (g *Gate) Superseded(ctx context.Context, p approval.Proposal, by string) error {
	hash := ""
	if p.Plan != nil {
		hash = p.Plan.PlanHash
	}
	return g.c.checks.Supersede(ctx, PlanRef{Environment: p.Environment, Revision: p.Revision, PlanHash: hash}, by)
}

// Completed reports the end of a plan on its run: cancelled when rejected (by a click or over the API; the
// only place a rejection is written to the run), success or failure with per-workload results after an
// apply — for skipConfirmation environments too, so every deploy shows on its commit.
func (g *Gate) Completed(ctx context.Context, p approval.Proposal, o approval.Outcome) error {
	approver := o.Approver
	if approval.IsAuto(approver) {
		approver = ""
	}
	switch o.Result {
	case approval.ResultRejected:
		return g.c.checks.Rejected(ctx, PlanRef{Environment: p.Environment, Revision: p.Revision, PlanHash: p.Plan.PlanHash}, o.Approver, o.Message)
	case approval.ResultInterrupted:
		return g.c.checks.Interrupted(ctx, p.Plan, approver, o.Message)
	}
	res := o.Apply
	if res == nil {
		res = &reconcile.Result{Plan: p.Plan}
	}
	if res.Plan == nil {
		res.Plan = p.Plan
	}
	var applyErr error
	if o.Result == approval.ResultFailed && o.Message != "" && (o.Apply == nil || !o.Apply.Failed()) {
		// Nothing was applied, or what was applied is fine but a task of
		// the sequence after it failed.
		applyErr = errors.New(o.Message)
	}
	if o.Result == approval.ResultSucceeded && o.Sequence == promote.ResultWarning {
		// Deployed, but a task warned: neither a pass nor a failure. The
		// title tells it from a withdrawn plan's neutral run (prbot reads
		// it as a warning: promote.CheckResult).
		out := RenderResult(res, approver, nil, g.c.checks.api.detailsURL(p.Environment))
		if o.Message != "" {
			out.Summary = cut("**"+promote.WarningTitle+":** "+oneLine(o.Message)+"\n\n"+out.Summary, g.c.checks.api.detailsURL(p.Environment))
		}
		out.Title = promote.WarningTitle + ": " + strings.ToLower(out.Title[:1]) + out.Title[1:]
		return g.c.checks.upsert(ctx, res.Plan, runUpdate{Conclusion: ConclusionNeutral, Output: output(out)})
	}
	if o.Result == approval.ResultRolledBack {
		// Failed, and put back: the message says why and how the rollback went.
		applyErr = errors.New(o.Message)
	}
	return g.c.checks.Finished(ctx, res, approver, applyErr)
}

// Register adds the handler to a webhook receiver for check_run and pull_request events.
func (h *Handler) Register(r *webhook.Receiver) {
	r.Handle("check_run", func(ctx context.Context, e webhook.Event) error {
		return h.HandleCheckRunDelivery(ctx, e.Delivery, e.Payload)
	})
	r.Handle("pull_request", func(ctx context.Context, e webhook.Event) error { return h.HandlePullRequest(ctx, e.Payload) })
}

// rateLimited wraps err in an *approval.RateLimitedError when GitHub refused
// the request for its rate limit (primary: X-RateLimit-Reset; secondary:
// Retry-After) beyond what the client's retries wait; other errors are
// returned as they are.
func rateLimited(err error, now time.Time) error {
	var primary *gh.RateLimitError
	if errors.As(err, &primary) {
		return &approval.RateLimitedError{Service: "GitHub", Until: primary.Rate.Reset.Time, Err: err}
	}
	var secondary *gh.AbuseRateLimitError
	if errors.As(err, &secondary) {
		until := now.Add(time.Minute)
		if d := secondary.GetRetryAfter(); d > 0 {
			until = now.Add(d)
		}
		return &approval.RateLimitedError{Service: "GitHub", Until: until, Err: err}
	}
	var other *gh.ErrorResponse // a 429, or a 403 naming its wait, as GitHub's secondary limit answers
	if errors.As(err, &other) && other.Response != nil {
		code, after := other.Response.StatusCode, other.Response.Header.Get("Retry-After")
		if n, perr := strconv.Atoi(after); perr == nil && n >= 0 && (code == http.StatusTooManyRequests || code == http.StatusForbidden) {
			return &approval.RateLimitedError{Service: "GitHub", Until: now.Add(time.Duration(n) * time.Second), Err: err}
		}
	}
	return err
}
