package prbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v60/github"
)

// ErrClosedUnmerged is what waiting for a pull request's merge ends with
// when it is closed without being merged.
var ErrClosedUnmerged = errors.New("closed without merging")

// ErrUnreadable is what waiting for a pull request's merge ends with when
// GitHub refuses to show it (401, 403 other than a rate limit, 404): with
// no credentials, a private repository; with some, a token that may not
// read it. Waiting longer does not help.
var ErrUnreadable = errors.New("pull request not readable")

// MergeWatch follows one pull request until it is merged or closed (prbot
// bump --wait).
type MergeWatch struct {
	Owner, Repo string
	Number      int
	// Interval is the first wait between reads (default 5s); it doubles
	// up to MaxInterval (default 1m) while nothing changes, and is longer
	// when the rate limit's budget left would not last until its reset.
	Interval, MaxInterval time.Duration
	// Progress, when set, is told of the pull request's state when it
	// changes, and of waits for the rate limit.
	Progress func(string)
}

// Wait reads the pull request through gh until it is merged, returning
// its merge commit (the squash or rebase commit for those methods). A pull
// request closed unmerged is ErrClosedUnmerged, one GitHub will not show
// ErrUnreadable; GitHub unreachable or failing for a while, or rate
// limiting (the reset or Retry-After honoured), only delays the next read.
// ctx bounds the wait.
func (w MergeWatch) Wait(ctx context.Context, gh *github.Client) (string, error) {
	interval, maxInterval := w.Interval, w.MaxInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if maxInterval < interval {
		maxInterval = max(time.Minute, interval)
	}
	what := fmt.Sprintf("pull request %s/%s#%d", w.Owner, w.Repo, w.Number)
	last := ""
	say := func(msg string) {
		if msg != last && w.Progress != nil {
			w.Progress(msg)
		}
		last = msg
	}
	for delay := interval; ; delay = min(2*delay, maxInterval) {
		pr, resp, err := gh.PullRequests.Get(ctx, w.Owner, w.Repo, w.Number)
		wait := delay
		switch {
		case err == nil && pr.GetMerged():
			if pr.GetMergeCommitSHA() == "" {
				return "", fmt.Errorf("reading %s: merged, but GitHub names no merge commit", what)
			}
			say(fmt.Sprintf("%s merged as %s", what, shortSHA(pr.GetMergeCommitSHA())))
			return pr.GetMergeCommitSHA(), nil
		case err == nil && pr.GetState() == "closed":
			return "", fmt.Errorf("%s: %w", what, ErrClosedUnmerged)
		case err == nil:
			say(fmt.Sprintf("%s open, waiting for it to merge", what))
			if resp != nil {
				wait = max(wait, paced(resp.Rate, time.Now()))
			}
		case ctx.Err() != nil:
			return "", ctx.Err()
		default:
			d, transient := retryAfter(err, time.Now())
			if !transient {
				var e *github.ErrorResponse
				if errors.As(err, &e) && e.Response != nil {
					switch e.Response.StatusCode {
					case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
						return "", fmt.Errorf("reading %s: %w: GitHub answered %d %s", what, ErrUnreadable, e.Response.StatusCode, e.Message)
					}
				}
			}
			wait = max(wait, d)
			say(fmt.Sprintf("reading %s: %v (next read in %s)", what, err, wait.Round(time.Second)))
		}
		if err := sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}

// WaitMerged is w.Wait through the bot's GitHub client, on its repository.
func (b *Bot) WaitMerged(ctx context.Context, w MergeWatch) (string, error) {
	w.Owner, w.Repo = b.repo.Owner(), b.repo.Name()
	return w.Wait(ctx, b.repo.Client())
}

// retryAfter is how long a rate-limited read asks to wait (true), or false
// for an error that is no rate limit.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	var primary *github.RateLimitError
	if errors.As(err, &primary) {
		return max(primary.Rate.Reset.Sub(now)+time.Second, 0), true
	}
	var secondary *github.AbuseRateLimitError
	if errors.As(err, &secondary) {
		if d := secondary.GetRetryAfter(); d > 0 {
			return d, true
		}
		return time.Minute, true
	}
	var e *github.ErrorResponse
	if errors.As(err, &e) && e.Response != nil && (e.Response.StatusCode >= 500 || e.Response.StatusCode == http.StatusTooManyRequests) {
		return 0, true
	}
	// Not an answer of GitHub's (a network error): try again.
	return 0, e == nil
}

// paced is the wait between reads that makes the rate limit's budget left
// last until its reset (0 when GitHub sent no rate-limit headers).
func paced(r github.Rate, now time.Time) time.Duration {
	if r.Limit == 0 || r.Reset.IsZero() {
		return 0
	}
	left := r.Reset.Sub(now)
	if left <= 0 {
		return 0
	}
	if r.Remaining <= 0 {
		return left + time.Second
	}
	return left / time.Duration(r.Remaining+1)
}
