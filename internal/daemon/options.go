package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

type options struct {
	tracer   *tracing.Deploys
	log      logr.Logger
	gate     approval.Gate
	election LeaderElection
	identity string
	// The parts built by internal/wire.
	store        *state.Store
	clock        *clock.Remote
	targets      map[string][]reconcile.Target
	lockSvc      *lock.Service
	rec          *reconcile.Reconciler
	source       *gitsource.Source
	pushes       Pushes
	manifestOpts []manifest.Option
	applyGrace   time.Duration
	resync       time.Duration
	repropose    time.Duration
	tasks        map[string]sequence.Runner
	verifier     *verify.Verifier
	listener     sequence.Listener
	rollbackHook RollbackHook
	recordHook   RecordHook
	authors      approval.Authors
	ruleApprover RuleApprover
	// reportBackoff, reportBackoffMax: WithOutcomeRetry.
	reportBackoff, reportBackoffMax time.Duration
}

func defaultOptions() options {
	return options{
		tracer:     tracing.Off().Deploys(),
		log:        logr.Discard(),
		gate:       approval.Manual(),
		election:   DefaultLeaderElection(),
		applyGrace: 10 * time.Second,
		repropose:  DefaultRepropose,

		reportBackoff:    10 * time.Second,
		reportBackoffMax: 10 * time.Minute,
	}
}

// check judges the options together, once every Option has been applied
// over the defaults.
func (o *options) check(cfg *config.Config) error {
	var errs []error
	if cfg == nil {
		return errors.New("nil configuration")
	}
	if o.store == nil || o.clock == nil {
		errs = append(errs, errors.New("no state store: WithStore is required"))
	}
	if o.lockSvc == nil {
		errs = append(errs, errors.New("no lock service: WithLockService is required"))
	}
	if o.rec == nil {
		errs = append(errs, errors.New("no reconciler: WithReconciler is required"))
	}
	if o.source == nil {
		errs = append(errs, errors.New("no git source: WithSource is required"))
	}
	for _, env := range cfg.EnvironmentNames() {
		if _, ok := o.targets[env]; !ok {
			errs = append(errs, fmt.Errorf("environments.%s: no targets given (WithTargets)", env))
		}
	}
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

// RuleApprover says whether a person (a GitHub login) passes the teams and minPermission of the approval
// rules that apply to a plan (rule): the GitHub client's approver check, asked with the rules' values
// (internal/tally's Counter asks it).
type RuleApprover = tally.RuleApprover

// WithRuleApprover sets how an approver is checked against the teams and minPermission of
// environments.<env>.approvals.rules. Without it, an approval of a plan whose rules name teams or a
// permission is refused (nothing could check it).
func WithRuleApprover(f RuleApprover) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("configuring daemon: nil rule approver")
		}
		o.ruleApprover = f
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

// Pushes is where the daemon hears of pushes to the source's branch
// (internal/wire's push events of the webhook receiver): OnPush registers
// trigger, called for every push. An alias of the interface, not a type of
// its own, so that internal/wire's Builder.Pushes, which cannot name it,
// returns this very type and the Builder is a Parts.
type Pushes = interface {
	OnPush(trigger func()) error
}

// WithStore sets the state store (internal/wire's Builder.Store, over the
// state cluster's client) and the clock of that cluster's API server,
// followed from the store client's responses (Builder.StateClock): every
// time the daemon records or compares with a recorded one is on it. The
// store's client also holds the Leases and the wake-up ConfigMap.
func WithStore(s *state.Store, apiServer *clock.Remote) Option {
	return func(o *options) error {
		if s == nil || apiServer == nil {
			return errors.New("state store: nil store or clock")
		}
		o.store, o.clock = s, apiServer
		return nil
	}
}

// WithTargets sets every environment's reconcile targets, by environment
// name (Builder.AllTargets).
func WithTargets(t map[string][]reconcile.Target) Option {
	return func(o *options) error { o.targets = t; return nil }
}

// WithLockService sets the lock service the reconciler checks and the API
// serves (Builder.LockService).
func WithLockService(svc *lock.Service) Option {
	return func(o *options) error {
		if svc == nil {
			return errors.New("lock service: nil")
		}
		o.lockSvc = svc
		return nil
	}
}

// WithReconciler sets the reconciler (Builder.Reconciler): it checks the
// lock service's locks under LockAuthor, taking over its own.
func WithReconciler(r *reconcile.Reconciler) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("reconciler: nil")
		}
		o.rec = r
		return nil
	}
}

// WithSource sets the git source of the manifests (Builder.Source).
func WithSource(s *gitsource.Source) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("git source: nil")
		}
		o.source = s
		return nil
	}
}

// WithPushes makes pushes heard by p wake the source (default: it is
// polled only).
func WithPushes(p Pushes) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("pushes: nil")
		}
		o.pushes = p
		return nil
	}
}

// WithManifestOptions sets how the manifests are resolved
// (internal/wire's ManifestOptions of the manifest: section).
func WithManifestOptions(opts ...manifest.Option) Option {
	return func(o *options) error { o.manifestOpts = append(o.manifestOpts, opts...); return nil }
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

// WithOutcomeRetry sets how an outcome the gate refused (GitHub down beyond
// its client's retries) is reported again: first after base, the wait
// doubling per failure up to max (defaults 10s and 10m; see internal/outbox).
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

// RecordHook is told, on the replica working env and in its worker, after
// each pass and each decision, that env's records may have changed: the
// Environment resource (internal/envresource) is written from them. term
// names this replica's hold of env ("" with one leader: the worker runs only
// while it leads), and holds, asked right before a write, refuses once the
// term is over (state.Store.Holds). A hook must not write when nothing
// changed, and its errors are its own: the worker goes on.
type RecordHook func(ctx context.Context, env, term string, holds func(context.Context) error)

// WithRecordHook calls h after each pass and decision of every environment's
// worker (see RecordHook).
func WithRecordHook(h RecordHook) Option {
	return func(o *options) error {
		if h == nil {
			return errors.New("configuring daemon: nil record hook")
		}
		o.recordHook = h
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
