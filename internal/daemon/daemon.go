package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/view"
	"github.com/stagehand-gitops/stagehand/internal/wake"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// LockAuthor is the author of the deploy locks the daemon holds on
// <lockPath>/<target> while applying: the reconciler's typed identity
// (stagehand:reconciler). It is the same on every replica, so the next
// leader takes over a lock that a replica killed mid-apply left behind
// (pkg/lock's TakeOverOwnLocks), also one an older build wrote as
// lock.ReservedAuthor; locks by anyone else still block. It is
// identity.Reconciler written as pkg/lock writes it (lock.ReconcilerAuthor).
const LockAuthor = lock.ReconcilerAuthor

// Daemon is a running reconciler: see the package documentation.
type Daemon struct {
	// Views answers the API's reads (internal/view); dispatcher takes its
	// decisions.
	*view.Views
	*dispatcher

	cfg     *config.Config
	o       options
	log     logr.Logger
	store   *state.Store
	metrics *meter.Metrics
	source  *gitsource.Source
	rec     *reconcile.Reconciler
	targets map[string][]reconcile.Target
	lockSvc *lock.Service
	// clock is the state cluster's API server's clock: every time the
	// daemon records or compares with a recorded one (history, sequences,
	// locks, pins) comes from it, so replicas whose clocks disagree agree.
	clock    *clock.Remote
	envNames []string
	// rules are each environment's approval rules, compiled once.
	rules map[string]*policy.Set
	// calendars are each environment's deploy windows (nil: always open).
	calendars map[string]*policy.Calendar
	workers   map[string]*worker
	// shard holds the environments' Leases with
	// leaderElection.perEnvironment; nil with one leader.
	shard *lease.Shard

	leading atomic.Bool
	ready   atomic.Bool

	// snaps are the newest snapshot, handed to every worker.
	snaps *snapshots
	// bell wakes the replicas that poll (wake.go).
	bell *wake.Bell
}

// New makes a Daemon of the configuration over the parts given as options,
// built once per process by internal/wire: the state store and its API
// server's clock (WithStore), every environment's targets (WithTargets), the lock
// service (WithLockService), the reconciler checking its locks
// (WithReconciler), the git source (WithSource) and, optionally, where pushes
// arrive (WithPushes). It builds no client and starts nothing.
func New(cfg *config.Config, opts ...Option) (*Daemon, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring daemon: %w", err)
		}
	}
	if err := o.check(cfg); err != nil {
		return nil, fmt.Errorf("configuring daemon: %w", err)
	}
	d := &Daemon{cfg: cfg, o: o, log: o.log, targets: o.targets,
		workers: map[string]*worker{}, envNames: cfg.EnvironmentNames(),
		clock: o.clock, lockSvc: o.lockSvc, rec: o.rec, source: o.source}
	if o.identity == "" {
		d.o.identity = DefaultIdentity()
	}
	d.rules = map[string]*policy.Set{}
	for _, env := range d.envNames {
		set, err := cfg.ApprovalPolicy(env).RuleSet()
		if err != nil {
			return nil, fmt.Errorf("configuring daemon: environments.%s.approvals.rules: %w", env, err)
		}
		d.rules[env] = set
	}
	d.calendars = map[string]*policy.Calendar{}
	for _, env := range d.envNames {
		cal, err := policy.NewCalendar(cfg.Environments[env].Windows)
		if err != nil {
			return nil, fmt.Errorf("configuring daemon: environments.%s.windows: %w", env, err)
		}
		d.calendars[env] = cal
	}
	d.metrics = meter.New(d.clock.Now)
	d.metrics.WatchClock(d.clock)
	d.store = o.store
	d.bell = &wake.Bell{Client: d.store.Client(), Namespace: d.store.Namespace(), Identity: d.o.identity, Now: d.clock.Now, Log: d.log}
	if o.pushes != nil {
		// Push events trigger the source: on the leader directly, on any
		// other replica through a wake-up the leader watches (wake.go).
		if err := o.pushes.OnPush(d.pushed); err != nil {
			return nil, err
		}
	}
	d.metrics.WatchSource(d.source.Status, d.clock.Now)
	d.snaps = &snapshots{src: d.source, metrics: d.metrics, envs: d.envNames, log: d.log, wake: func() {
		for _, w := range d.workers {
			w.WakeUp()
		}
	}}
	for _, name := range d.envNames {
		d.workers[name] = newWorker(d.workerDeps(name))
	}
	if cfg.LeaderElection.PerEnvironment && d.o.election.Enable {
		d.shard = lease.NewShard(lease.Deps{
			Leases: d.store.Client().CoordinationV1().Leases(d.store.Namespace()), Store: d.store,
			Identity: d.o.identity, Election: d.o.election, Envs: d.envNames, Leadership: d.metrics.Leadership, Now: d.clock.Now,
			Start: d.workEnvironment, Applying: func(env string) bool { return d.workers[env].apply.Applying() },
			Logf: func(msg string, kv ...any) { d.log.Info(msg, append(kv, "identity", d.o.identity)...) },
			LogE: d.logE,
		})
		d.metrics.Unheld(d.envNames)
	}
	vc := view.Config{Config: cfg, Store: d.store, Clock: d.clock, Calendars: d.calendars, Targets: d.targets, Locks: d.lockSvc,
		Deliveries: state.NewDeliveries(d.store.Client(), d.store.Namespace(), state.DefaultMaxDeliveries)}
	if d.shard != nil {
		vc.Holders = d.shard
	}
	d.Views = view.New(vc)
	d.dispatcher = &dispatcher{envNames: d.envNames, workers: d.workers, store: d.store, clock: d.clock, log: d.log,
		leads: d.leads, leading: &d.leading, busyWait: 30 * time.Second}
	return d, nil
}

// DefaultIdentity names a replica without WithIdentity: the host name and a
// random suffix.
func DefaultIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// Metrics returns the daemon's metrics (and their private registry).
func (d *Daemon) Metrics() *meter.Metrics { return d.metrics }

// Store returns the daemon's state store.
func (d *Daemon) Store() *state.Store { return d.store }

// Source returns the daemon's git source (Trigger it to poll now).
func (d *Daemon) Source() *gitsource.Source { return d.source }

// Leading reports whether this replica currently leads (with
// leaderElection.perEnvironment: holds at least one environment).
func (d *Daemon) Leading() bool {
	if d.shard != nil {
		return len(d.shard.Held()) > 0
	}
	return d.leading.Load()
}

// Held lists the environments this replica holds with
// leaderElection.perEnvironment, in order; nil with one leader.
func (d *Daemon) Held() []string {
	if d.shard == nil {
		return nil
	}
	return d.shard.Held()
}

// leads reports whether this replica works env now.
func (d *Daemon) leads(env string) bool {
	if d.shard != nil {
		return d.shard.Holds(env)
	}
	return d.leading.Load()
}

// LockService returns the lock service the reconciler checks (internal/api
// serves its REST API).
func (d *Daemon) LockService() *lock.Service { return d.lockSvc }

// EnvironmentNames lists the configured environments in order.
func (d *Daemon) EnvironmentNames() []string { return d.envNames }

// Ready reports whether this replica can serve: Run has started and the
// state store answers; leading says whether it leads.
func (d *Daemon) Ready(ctx context.Context) (leading bool, err error) {
	if !d.ready.Load() {
		return false, errors.New("state not loaded yet")
	}
	if err := d.store.Check(ctx); err != nil {
		return false, err
	}
	return d.Leading(), nil
}

// Run takes part in leader election and, while this replica leads, polls
// the source and runs the environments' workers. It returns when ctx ends,
// after the workers have finished what was in flight and recorded it.
// (internal/api serves the HTTP API beside it.)
func (d *Daemon) Run(ctx context.Context) error {
	d.log.Info("starting", "identity", d.o.identity)
	// The targets' workloads are watched for the daemon's lifetime: plans
	// read the watches instead of listing (reconcile.Reconciler.Watch).
	ctx, stop := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- d.rec.Watch(ctx) }()
	defer func() { stop(); <-watched }()
	// So are the Lock objects, for the re-checks before each patch; if they
	// cannot be watched, those read the API server (lock.Watched).
	if lw, ok := d.lockSvc.Watched(); ok {
		locksWatched := make(chan struct{})
		go func() {
			defer close(locksWatched)
			if err := lw.Run(ctx); err != nil {
				d.log.Error(err, "not watching locks: the re-checks before each patch read the API server")
			}
		}()
		defer func() { stop(); <-locksWatched }()
	}
	d.ready.Store(true)
	if d.shard != nil {
		d.runSharded(ctx)
		return nil
	}
	c := lease.Candidate{Client: d.store.Client(), Namespace: d.store.Namespace(), Identity: d.o.identity, Election: d.o.election}
	return lease.Lead(ctx, c,
		func(leading bool) {
			if !leading {
				d.leading.Store(false) // true once it works (leadingLoop)
			}
			d.metrics.SetLeader(leading)
			if leading {
				d.log.Info("leading: fetching and applying", "identity", d.o.identity)
			} else {
				d.log.Info("not leading any more", "identity", d.o.identity)
			}
		}, d.leadingLoop)
}

// leadingLoop is the leader's work: the source's poll loop hands every new
// snapshot to all workers; each worker handles its environment.
func (d *Daemon) leadingLoop(ctx context.Context) {
	if d.o.election.Enable {
		// Replicas with leaderElection.perEnvironment give back what they
		// hold first (mixed.go).
		if err := d.waitEnvLeases(ctx); err != nil {
			return
		}
	}
	d.leading.Store(true)
	var wg sync.WaitGroup
	for _, name := range d.envNames {
		w := d.workers[name]
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.bell.Watch(ctx, func() { d.metrics.Pushed(); d.source.Trigger() }, d.source.Trigger)
	}()
	err := d.source.Run(ctx, func(_ context.Context, s gitsource.Snapshot) { d.snaps.offer(s) })
	if err != nil && !errors.Is(err, context.Canceled) {
		d.log.Error(err, "git source stopped")
	}
	wg.Wait()
}

// runSharded is Run with leaderElection.perEnvironment: every replica polls
// the source and watches for wake-ups; the shard loop holds environments and
// runs their workers.
func (d *Daemon) runSharded(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.shard.Run(ctx) }()
	go func() {
		defer wg.Done()
		d.bell.Watch(ctx, func() { d.metrics.Pushed(); d.source.Trigger() }, d.source.Trigger)
	}()
	err := d.source.Run(ctx, func(_ context.Context, s gitsource.Snapshot) { d.snaps.offer(s) })
	if err != nil && !errors.Is(err, context.Canceled) {
		d.log.Error(err, "git source stopped")
	}
	wg.Wait()
}

// waitEnvLeases returns once no replica with leaderElection.perEnvironment
// holds an environment (lease.WaitEnvLeases), or ctx's error.
func (d *Daemon) waitEnvLeases(ctx context.Context) error {
	return lease.WaitEnvLeases(ctx, d.store.Client().CoordinationV1().Leases(d.store.Namespace()), d.o.election, d.logE)
}

// logE logs an error naming this replica.
func (d *Daemon) logE(err error, msg string, kv ...any) {
	d.log.Error(err, msg, append(kv, "identity", d.o.identity)...)
}

// workEnvironment runs env's worker until ctx ends, writing its state under
// token's term (lost is called when a write is refused).
func (d *Daemon) workEnvironment(ctx context.Context, env, token string, lost func()) {
	w := d.workers[env]
	w.store = pass.Observed(d.store.Fenced(token, lost), d.metrics, env)
	// A new term: propose again what is pending, write the status afresh.
	w.lastStatus = nil
	w.tell.Forget()
	w.run(ctx)
}

// workerDeps gives env's worker what it uses of the daemon.
func (d *Daemon) workerDeps(env string) workerDeps {
	ec := d.cfg.Environments[env]
	resync := d.o.resync
	switch {
	case resync != 0:
	case d.cfg.Source.Interval.Duration > 0:
		resync = d.cfg.Source.Interval.Duration
	default:
		resync = time.Minute
	}
	verification := delivery.Verification{Verifier: d.o.verifier, Own: d.o.tasks, Observe: d.metrics.ObserveVerification}
	return workerDeps{
		env: env, tracer: d.o.tracer, calendar: d.calendars[env], store: pass.Observed(d.store, d.metrics, env), gate: d.o.gate,
		reconciler: d.rec, targets: d.targets[env], lockPath: ec.LockPath, statusTargets: ec.Targets,
		manifests: envManifests{d: d, env: env, lockPath: ec.LockPath},
		source:    d.snaps, allowRewrite: d.cfg.Source.AllowRewrite,
		rollback: ec.RollsBack(), rollbackHook: d.o.rollbackHook, recorded: d.o.recordHook, promotion: PromotionOf(ec),
		approvals: &tally.Counter{Env: env, Policy: d.cfg.ApprovalPolicy(env), Rules: d.rules[env], RuleApprover: d.o.ruleApprover,
			Authors: authorsOf(d.o.authors, d.source), Locks: policyLocks(d.lockSvc, ec.LockPath), Range: d.source, Now: d.clock.Now},
		metrics: d.metrics, log: d.log, now: d.clock.Now,
		resync: resync, repropose: d.o.repropose, applyGrace: d.o.applyGrace,
		reportBackoff: d.o.reportBackoff, reportBackoffMax: d.o.reportBackoffMax,
		sequence: delivery.Config{
			Pipeline: func(s gitsource.Snapshot) (*promote.Pipeline, error) { return promote.Load(s.FS, d.cfg.Source.Root) },
			Tasks:    tracedTasks(d.o.tracer, verification.Runners(env, d.targets[env])), CheckTask: verification.Checker(env, d.targets[env]), Listener: d.o.listener},
	}
}

// authorsOf lists commit authors for four-eyes: given's (WithAuthors: GitHub logins), else the git
// source's e-mail addresses.
func authorsOf(given approval.Authors, src *gitsource.Source) approval.Authors {
	if given != nil {
		return given
	}
	return src
}

// Once polls the source once and runs one pass over every environment:
// skipConfirmation environments are applied, the others' plans are left
// pending. It returns an error naming every environment that failed.
func (d *Daemon) Once(ctx context.Context) error {
	s, err := d.source.Poll(ctx)
	if err != nil {
		d.metrics.Fail("", meter.ReasonFetch)
		return fmt.Errorf("fetching %s: %w", d.cfg.Source.Branch, err)
	}
	d.snaps.keep(s)
	var errs []error
	for _, name := range d.envNames {
		if err := d.workers[name].pass(ctx); err != nil {
			errs = append(errs, fmt.Errorf("environment %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Approve approves env's pending plan if planHash is its hash: the worker
// plans again and, when the hash still matches and the revision is still the
// newest, applies it. It returns the approved plan once the worker has
// checked it (the apply goes on in the background) or a *approval.NotPendingError
// naming what is pending now.
func (ds *dispatcher) Approve(ctx context.Context, env, planHash string, approver identity.Principal) (*approval.Pending, error) {
	return ds.decide(ctx, env, pass.Decision{Approve: true, PlanHash: planHash, Who: approver, Caller: trace.SpanContextFromContext(ctx)})
}

// Reject rejects env's pending plan if planHash is its hash; it is recorded
// in the history and not applied. The next revision is planned as usual.
func (ds *dispatcher) Reject(ctx context.Context, env, planHash string, why approval.Why) (*approval.Pending, error) {
	return ds.decide(ctx, env, pass.Decision{PlanHash: planHash, Who: why.By, Reason: why.Reason, Caller: trace.SpanContextFromContext(ctx)})
}

func (ds *dispatcher) decide(ctx context.Context, env string, dc pass.Decision) (*approval.Pending, error) {
	w, ok := ds.workers[env]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, ds.envNames)
	}
	if !ds.leads(env) {
		return ds.handOver(ctx, env, dc)
	}
	dc.At = time.Now() // local and monotonic: compared with the worker's releaseSince
	dc.Reply = make(chan pass.Reply, 1)
	busy := time.NewTimer(ds.busyWait)
	defer busy.Stop()
	select {
	case w.decisions <- dc:
	case <-busy.C:
		// The worker is busy (a long rollout) or leadership is changing
		// hands: leave the decision in the Store for whoever leads next.
		return ds.handOver(ctx, env, dc)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-dc.Reply:
		return r.Pending, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resolve resolves env's manifest in s.
func (d *Daemon) resolve(ctx context.Context, s gitsource.Snapshot, env string) (*manifest.Environment, error) {
	return manifest.Resolve(ctx, manifest.Repo{FS: s.FS, Root: d.cfg.Source.Root}, env, d.o.manifestOpts...)
}

// Plan resolves and plans env at snapshot s against the live targets without
// changing or recording anything (for PR previews).
func (d *Daemon) Plan(ctx context.Context, s gitsource.Snapshot, env string) (*reconcile.Plan, error) {
	if _, ok := d.cfg.Environments[env]; !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, d.envNames)
	}
	envM, err := d.resolve(ctx, s, env)
	if err != nil {
		return nil, err
	}
	return d.rec.Plan(ctx, d.workers[env].request(s, envM))
}

var (
	_ approval.Decider    = (*Daemon)(nil)
	_ approval.Deliveries = (*Daemon)(nil)
)

// PromotionOf is what the applies of environment ec do with a Rollout
// paused at a step: the daemon's, and `reconciler apply`'s (internal/cli).
func PromotionOf(ec config.Environment) reconcile.Promotion {
	if ec.PromotesRollouts() {
		return reconcile.PromotionAuto
	}
	return reconcile.PromotionWait
}
