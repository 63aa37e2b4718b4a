package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

type options struct {
	log           logr.Logger
	gate          approval.Gate
	election      LeaderElection
	identity      string
	restConfig    *rest.Config
	webhook       *webhook.Receiver
	reconcileOpts []reconcile.Option
	sourceOpts    []gitsource.Option
	applyGrace    time.Duration
	resync        time.Duration
	repropose     time.Duration
	tasks         map[string]sequence.Runner
	verifier      *verify.Verifier
	listener      sequence.Listener
	rollbackHook  RollbackHook
	authors       approval.Authors
	lockObserver  lock.Observer
	now           func() time.Time
	// reportBackoff, reportBackoffMax: WithOutcomeRetry.
	reportBackoff, reportBackoffMax time.Duration
}

func defaultOptions() options {
	return options{
		log:        logr.Discard(),
		gate:       approval.Manual(),
		election:   DefaultLeaderElection(),
		applyGrace: 10 * time.Second,
		repropose:  DefaultRepropose,
		now:        time.Now,

		reportBackoff:    10 * time.Second,
		reportBackoffMax: 10 * time.Minute,
	}
}

// check judges the options together, once every Option has been applied
// over the defaults.
func (o *options) check() error {
	var errs []error
	if o.applyGrace < 0 {
		errs = append(errs, fmt.Errorf("apply grace: must not be negative, got %s", o.applyGrace))
	}
	if o.reportBackoff > o.reportBackoffMax {
		errs = append(errs, fmt.Errorf("outcome retry: first wait %s is longer than the longest %s", o.reportBackoff, o.reportBackoffMax))
	}
	if o.election.Enable && (o.election.LeaseDuration <= o.election.RenewDeadline || o.election.RetryPeriod <= 0) {
		errs = append(errs, errors.New("leader election: want leaseDuration > renewDeadline > retryPeriod > 0"))
	}
	return errors.Join(errs...)
}

// Option configures New.
type Option func(*options) error

// WithLogger sets the logger (default: discard).
func WithLogger(l logr.Logger) Option {
	return func(o *options) error { o.log = l; return nil }
}

// WithGate sets the gate of environments without skipConfirmation (default
// approval.Manual()). Use approval.Gates(approval.Manual(), github) to offer several ways to approve.
func WithGate(g approval.Gate) Option {
	return func(o *options) error {
		if g == nil {
			return errors.New("configuring daemon: nil gate")
		}
		o.gate = g
		return nil
	}
}

// WithAuthors sets how the authors of the commits to deploy are listed for approvals.forbidAuthors
// (four-eyes): the GitHub client's commit logins when GitHub is configured. The default is the git
// source's author and committer e-mail addresses.
func WithAuthors(a approval.Authors) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("configuring daemon: nil authors")
		}
		o.authors = a
		return nil
	}
}

// LeaderElection configures leader election: lease.Election, fluxcd's
// runtime options (and flags). Enable false makes the process lead
// unconditionally (a single replica, or --once).
type LeaderElection = lease.Election

// DefaultLeaderElection returns the options used when none are given
// (lease.DefaultElection): enabled, released on shutdown, fluxcd's default
// durations.
func DefaultLeaderElection() LeaderElection { return lease.DefaultElection() }

// WithLeaderElection sets the leader election options (default
// DefaultLeaderElection(); Enable false leads unconditionally).
func WithLeaderElection(le LeaderElection) Option {
	return func(o *options) error { o.election = le; return nil }
}

// WithIdentity names this replica in the Lease and in logs (default: host
// name and a random suffix).
func WithIdentity(id string) Option {
	return func(o *options) error { o.identity = id; return nil }
}

// WithRESTConfig makes every Kubernetes client (state, locks, all targets)
// use cfg instead of the kubeconfig files of the configuration.
func WithRESTConfig(cfg *rest.Config) Option {
	return func(o *options) error { o.restConfig = rest.CopyConfig(cfg); return nil }
}

// WithWebhook uses r as the webhook receiver (internal/api mounts it at
// /webhook/github) instead of one built from github.webhookSecretFile. Either
// way the daemon registers a "push" handler on it that wakes the git source;
// register others (check_run) before Run.
func WithWebhook(r *webhook.Receiver) Option {
	return func(o *options) error { o.webhook = r; return nil }
}

// WithReconcileOptions adds options to the pkg/reconcile Reconciler after
// those derived from the configuration.
func WithReconcileOptions(opts ...reconcile.Option) Option {
	return func(o *options) error { o.reconcileOpts = append(o.reconcileOpts, opts...); return nil }
}

// WithSourceOptions adds options to the pkg/gitsource Source.
func WithSourceOptions(opts ...gitsource.Option) Option {
	return func(o *options) error { o.sourceOpts = append(o.sourceOpts, opts...); return nil }
}

// WithApplyGrace sets how long an apply in progress may go on after shutdown
// begins (default 10s): patches in flight finish, waiting for rollouts stops,
// and the state is recorded. A restart re-plans what is left.
func WithApplyGrace(d time.Duration) Option {
	return func(o *options) error { o.applyGrace = d; return nil }
}

// DefaultRepropose is how often a plan still pending is proposed to the gate
// again (see WithRepropose).
const DefaultRepropose = 5 * time.Minute

// WithRepropose sets how often a plan still pending is proposed to the gate
// again (default DefaultRepropose; checked at each pass, so at most as often
// as the resync): Propose is idempotent, and the repeat lets a gate repair
// what it shows, such as the GitHub gate giving back the buttons of a check
// run whose approval click was lost with the replica that took it.
func WithRepropose(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("repropose: must be positive, got %s", d)
		}
		o.repropose = d
		return nil
	}
}

// WithClock sets this host's wall clock (default time.Now). The daemon
// records and compares times on the state cluster's API server's clock,
// followed from the Date headers of its responses (internal/clock): now is
// what that offset is measured against.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("configuring daemon: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithOutcomeRetry sets how an outcome the gate refused (GitHub down beyond
// its client's retries) is reported again: first after base, the wait
// doubling per failure up to max (defaults 10s and 10m; see unreported.go).
func WithOutcomeRetry(base, max time.Duration) Option {
	return func(o *options) error {
		if base <= 0 || max <= 0 {
			return fmt.Errorf("outcome retry: waits must be positive, got %s and %s", base, max)
		}
		o.reportBackoff, o.reportBackoffMax = base, max
		return nil
	}
}

// WithResync sets how often each environment is planned again without a new
// revision, to notice drift and retry failures (default: source.interval,
// or one minute with a cron schedule; negative disables).
func WithResync(d time.Duration) Option {
	return func(o *options) error { o.resync = d; return nil }
}

// WithTask makes run the implementation of the sequence task called name
// (promote.TaskTest or promote.TaskEvaluation): a sequence in pipeline.yaml
// that holds a task kind no WithTask implements is refused when its
// environment is planned.
func WithTask(name string, run sequence.Runner) Option {
	return func(o *options) error {
		if name != promote.TaskTest && name != promote.TaskEvaluation {
			return fmt.Errorf("configuring daemon: task %q: only %q and %q are implemented outside the daemon", name, promote.TaskTest, promote.TaskEvaluation)
		}
		if run == nil {
			return fmt.Errorf("configuring daemon: task %q: nil runner", name)
		}
		if o.tasks == nil {
			o.tasks = map[string]sequence.Runner{}
		}
		o.tasks[name] = run
		return nil
	}
}

// WithSequenceListener makes l hear every step of every environment's
// sequence (internal/notify's Notifier sends them as CloudEvents).
func WithSequenceListener(l sequence.Listener) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("configuring daemon: nil sequence listener")
		}
		o.listener = l
		return nil
	}
}

// WithRollbackHook calls h once each automatic rollback of a failed rollout
// (environments.<env>.onFailedRollout: rollback) is recorded, with the
// environment, the history entry's ID and the cause: the rollback command
// opens the pull request that brings git in line with the cluster, and a hold.
func WithRollbackHook(h RollbackHook) Option {
	return func(o *options) error { o.rollbackHook = h; return nil }
}

// WithLockObserver makes o hear every lock taken and removed through the
// daemon's lock service (its API and its CLI clients; internal/notify's
// Notifier sends them as lock.taken and lock.released).
func WithLockObserver(o lock.Observer) Option {
	return func(opts *options) error {
		if o == nil {
			return errors.New("configuring daemon: nil lock observer")
		}
		opts.lockObserver = o
		return nil
	}
}
