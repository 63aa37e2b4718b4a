package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// Option configures New (the client) and NewHandler (the webhook handler): each option says which it
// concerns; the other ignores it.
type Option func(*options) error

type options struct {
	// Client.
	transport      http.RoundTripper
	now            func() time.Time
	token          string
	anonymous      bool
	retry          RetryPolicy
	lostClickAfter time.Duration
	previewer      Previewer // the handler's PR previews; nil for none
	policies       map[string]config.Approvals
	// Handler.
	onError         func(error)
	decisionTimeout time.Duration
	preview         previewOptions
	onMerged        func(ctx context.Context, number int, headRef string) error
}

// DefaultLostClickAfter is how long a check run may stay in progress after an approval click, while its
// plan is still pending, before the click counts as lost: well past DefaultDecisionTimeout.
const DefaultLostClickAfter = 10 * time.Minute

// DefaultDecisionTimeout bounds one approval or rejection taken after its webhook was answered.
const DefaultDecisionTimeout = 5 * time.Minute

// newOptions applies opts over the defaults. NewHandler checks the one combination that matters, its decision
// timeout against its client's lost-click delay.
func newOptions(opts []Option) (options, error) {
	o := options{
		transport: http.DefaultTransport, now: time.Now, retry: DefaultRetryPolicy(), lostClickAfter: DefaultLostClickAfter,
		onError: func(error) {}, decisionTimeout: DefaultDecisionTimeout,
		preview: defaultPreviewOptions(),
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// WithTransport sets the HTTP transport under authentication and retries (client; default
// http.DefaultTransport).
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("nil transport")
		}
		o.transport = t
		return nil
	}
}

// WithClock sets this host's wall clock (client; default time.Now). The client keeps GitHub's time from
// the Date headers of its answers, and check-run times, lost clicks and rate-limit waits are on that clock,
// so a replica whose own clock is off writes and judges the same times as the others.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("nil clock")
		}
		o.now = now
		return nil
	}
}

// WithToken authenticates with a static token instead of the GitHub App (client; tests, personal setups).
func WithToken(token string) Option {
	return func(o *options) error {
		if token == "" {
			return errors.New("empty token")
		}
		o.token = token
		return nil
	}
}

// WithAnonymous reads GitHub without credentials instead of with the
// GitHub App (client): public repositories only, within GitHub's
// anonymous rate limit (prbot bump --via --wait, which holds no GitHub
// credential, following a pull request).
func WithAnonymous() Option {
	return func(o *options) error {
		o.anonymous = true
		return nil
	}
}

// WithApprovals gives each environment's effective approval policy (config.Config.ApprovalPolicy): its
// approvers rule replaces github.approvers for that environment, and check runs state its required
// approvals and four-eyes rule (client; environments not given follow github.approvers, one approval).
func WithApprovals(policies map[string]config.Approvals) Option {
	return func(o *options) error {
		for env, p := range policies {
			if p.MinPermission == "" && len(p.Teams) == 0 {
				return fmt.Errorf("approval policy of %s: no one may approve (neither minPermission nor teams)", env)
			}
			if p.MinPermission != "" && permissionRank(p.MinPermission) == 0 {
				return fmt.Errorf("approval policy of %s: unknown minPermission %q", env, p.MinPermission)
			}
		}
		o.policies = policies
		return nil
	}
}

// WithRetry replaces the retry policy (client; DefaultRetryPolicy otherwise).
func WithRetry(p RetryPolicy) Option {
	return func(o *options) error {
		if p.MaxAttempts < 1 {
			return fmt.Errorf("retry policy: MaxAttempts must be at least 1, got %d", p.MaxAttempts)
		}
		o.retry = p
		return nil
	}
}

// WithLostClickAfter sets how long after a click a run still in progress with its plan pending is given
// back its buttons (client; DefaultLostClickAfter). It must exceed the handler's decision timeout.
func WithLostClickAfter(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("lost click after: must be positive, got %s", d)
		}
		o.lostClickAfter = d
		return nil
	}
}

// OnDecisionError receives the errors of decisions taken after their webhook was answered (handler; shown
// on the check run too, unless updating the run failed, which is then part of the error); the binary logs
// them. Default: dropped.
func OnDecisionError(f func(error)) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("nil decision error function")
		}
		o.onError = f
		return nil
	}
}

// OnMerged is called (handler) for each pull request of the manifests
// repository, from one of its own branches, merged into the followed
// branch, with its number and head branch: internal/cli ends the hold of a
// merged rollback pull request there. An error fails the delivery, which
// GitHub may redeliver.
func OnMerged(f func(ctx context.Context, number int, headRef string) error) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("nil merged pull request function")
		}
		o.onMerged = f
		return nil
	}
}

// WithPreviewer makes the handler preview the pull requests into its base branch with p (see
// HandlePullRequest); nil, as without it, previews nothing.
func WithPreviewer(p Previewer) Option {
	return func(o *options) error {
		o.previewer = p
		return nil
	}
}

// WithDecisionTimeout bounds one approval or rejection (handler; default DefaultDecisionTimeout): asking
// the remote for the newest commit and re-planning, not the apply, which goes on in the daemon.
func WithDecisionTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("decision timeout: must be positive, got %s", d)
		}
		o.decisionTimeout = d
		return nil
	}
}
