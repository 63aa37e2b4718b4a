package wire

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Client settings shared by every command and the daemon.
const (
	// DefaultQPS and DefaultBurst: no client-side rate limit. The reconciler
	// bounds its requests in flight (workloads.concurrency) and the API
	// server's priority and fairness protects it; a token bucket on top would
	// only serialise a large deploy.
	DefaultQPS   = -1
	DefaultBurst = 0
	// ContentType is what the clients send: protobuf halves the CPU both
	// sides spend on large lists and on patch responses, and every kind the
	// typed clients touch is a built-in type (the lock store's dynamic
	// client speaks JSON by itself).
	ContentType = "application/vnd.kubernetes.protobuf"
	// AcceptContentTypes lets JSON through for what has no protobuf form.
	AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	// UserAgent names Stagehand in the API servers' audit logs.
	UserAgent = "stagehand"
)

// Option configures the builders of this package. Each builder reads the
// options that concern it and ignores the others, so one list can be handed
// to all of them.
type Option func(*options) error

type options struct {
	restConfig    *rest.Config
	wrap          transport.WrapperFunc
	qps           float32
	burst         int
	reconcileOpts []reconcile.Option
	sourceOpts    []gitsource.Option
	githubAPIURL  string
	httpTransport http.RoundTripper
	now           func() time.Time
	local         func() time.Time
	lockObserver  lock.Observer
	// Builder only.
	recorders        Recorders
	author           string
	takeOverOwnLocks bool
	formerAuthors    []string
	webhook          *webhook.Receiver
	githubOpts       []github.Option
	githubToken      string
	githubAnonymous  bool
	authLog          logr.Logger
	tracingOpts      []tracing.Option
	tracing          *tracing.Provider
}

func defaultOptions() options {
	return options{qps: DefaultQPS, burst: DefaultBurst, authLog: logr.Discard()}
}

// makeOptions applies opts over the defaults and checks the combination.
func makeOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	if o.qps > 0 && o.burst < 1 {
		return options{}, fmt.Errorf("rate limit: a qps of %v needs a burst of at least 1", o.qps)
	}
	return o, nil
}

// WithRESTConfig makes every Kubernetes client (state, locks, all targets)
// talk to the API server of rc instead of the configured kubeconfig files
// (tests, and a daemon told where its cluster is). The shared client
// settings are applied on top of a copy of rc.
func WithRESTConfig(rc *rest.Config) Option {
	return func(o *options) error {
		if rc == nil {
			return errors.New("rest config: nil")
		}
		o.restConfig = rest.CopyConfig(rc)
		return nil
	}
}

// WithWrapTransport wraps every Kubernetes client's transport (to count
// requests, for example).
func WithWrapTransport(fn transport.WrapperFunc) Option {
	return func(o *options) error { o.wrap = fn; return nil }
}

// WithRateLimit sets the Kubernetes clients' rate limit (default
// DefaultQPS, DefaultBurst: none); qps < 0 disables it.
func WithRateLimit(qps float32, burst int) Option {
	return func(o *options) error {
		if burst < 0 {
			return fmt.Errorf("rate limit: burst %d must not be negative", burst)
		}
		o.qps, o.burst = qps, burst
		return nil
	}
}

// WithReconcileOptions adds options to the Reconciler after those derived
// from the configuration.
func WithReconcileOptions(opts ...reconcile.Option) Option {
	return func(o *options) error { o.reconcileOpts = append(o.reconcileOpts, opts...); return nil }
}

// WithSourceOptions adds options to the git Source after those derived from
// the configuration.
func WithSourceOptions(opts ...gitsource.Option) Option {
	return func(o *options) error { o.sourceOpts = append(o.sourceOpts, opts...); return nil }
}

// WithGitHubAPIURL sets the GitHub API base URL where the git source mints
// the installation tokens of source.auth.githubApp (GitHub Enterprise, or a
// test server; default https://api.github.com).
func WithGitHubAPIURL(u string) Option {
	return func(o *options) error { o.githubAPIURL = u; return nil }
}

// WithHTTPTransport sets the transport of the GitHub App token exchange
// (default: HTTPTransport of the source, which trusts source.caFile).
func WithHTTPTransport(rt http.RoundTripper) Option {
	return func(o *options) error { o.httpTransport = rt; return nil }
}

// WithLockObserver makes the lock service tell o about every lock taken and
// removed through it (notifications: lock.taken, lock.released).
func WithLockObserver(o lock.Observer) Option {
	return func(opts *options) error {
		if o == nil {
			return errors.New("lock observer: nil")
		}
		opts.lockObserver = o
		return nil
	}
}

// WithLocalClock sets this host's wall clock (default time.Now), from which
// the git source's GitHub App token exchange (source.auth.githubApp) follows
// GitHub's clock.
func WithLocalClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("local clock: nil")
		}
		o.local = now
		return nil
	}
}

// localNow is WithLocalClock's clock, or time.Now.
func (o options) localNow() func() time.Time {
	if o.local == nil {
		return time.Now
	}
	return o.local
}

// WithClock sets the lock service's clock (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("clock: nil")
		}
		o.now = now
		return nil
	}
}

// WithRecorders gives each target the Builder builds recorders(client) as
// its Event recorder (the daemon's: EventRecorders); without it reconcile
// writes Events through the target's client itself.
func WithRecorders(r Recorders) Option {
	return func(o *options) error { o.recorders = r; return nil }
}

// WithAuthor names who the Builder's reconciler takes deploy locks and
// writes Events as (default reconcile.DefaultAuthor).
func WithAuthor(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("author: empty")
		}
		o.author = name
		return nil
	}
}

// WithTakeOverOwnLocks makes the Builder's reconciler take over the deploy
// locks its author (WithAuthor), or formerly, left behind instead of waiting
// for them to expire: only for the daemon, whose replicas all apply as
// lock.ReconcilerAuthor.
func WithTakeOverOwnLocks(formerly ...string) Option {
	return func(o *options) error { o.takeOverOwnLocks, o.formerAuthors = true, formerly; return nil }
}

// WithWebhook makes the Builder's webhook receiver r instead of one built
// from github.webhookSecretFile.
func WithWebhook(r *webhook.Receiver) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("webhook receiver: nil")
		}
		o.webhook = r
		return nil
	}
}

// WithGitHubOptions adds options to the Builder's GitHub client after those
// derived from the configuration (transport, approvals, clock).
func WithGitHubOptions(opts ...github.Option) Option {
	return func(o *options) error { o.githubOpts = append(o.githubOpts, opts...); return nil }
}

// WithAnonymousGitHub makes the Builder's GitHub client read without
// credentials (github.WithAnonymous): public repositories only.
func WithAnonymousGitHub() Option {
	return func(o *options) error { o.githubAnonymous = true; return nil }
}

// WithGitHubToken makes the Builder's GitHub client authenticate with a
// static token instead of github.app (prbot's --token-file or
// $GITHUB_TOKEN).
func WithGitHubToken(token string) Option {
	return func(o *options) error {
		if token == "" {
			return errors.New("GitHub token: empty")
		}
		o.githubToken = token
		return nil
	}
}
