package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/decision"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/deploy"
	"github.com/stagehand-gitops/stagehand/internal/gate"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/release"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/window"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// workerDeps is everything a worker uses, given explicitly by the Daemon
// (built in one place, Daemon.workerDeps; its roles are in roles.go); a
// worker has no way back to the Daemon.
type workerDeps struct {
	env string
	// tracer traces the passes, steps and decisions (WithTracing).
	tracer *tracing.Deploys
	// calendar is the environment's deploy windows (nil: always open).
	calendar *policy.Calendar
	// store keeps the pending plan, the apply in flight, the history and the status.
	store pass.Store
	// gate is told about every plan (Auto replaces it to decide for
	// skipConfirmation environments, but it still hears Superseded and Completed).
	gate approval.Gate
	// reconciler plans, applies and restores in targets, under the locks
	// of lockPath (the environment's).
	reconciler pass.Reconciler
	targets    []reconcile.Target
	lockPath   string
	// statusTargets are the configured targets the status lists.
	statusTargets []config.Target
	// manifests resolves the environment's manifest and the notes shown
	// beside a proposal (nil: none).
	manifests pass.Manifests
	// source is where revisions come from (the Daemon's snapshots); unless
	// allowRewrite, a plan whose revision does not descend from the last
	// applied one needs an approval even in a skipConfirmation environment.
	source       pass.Source
	allowRewrite bool
	// rollback (environments.<env>.onFailedRollout: rollback) makes an
	// apply whose workloads failed undo itself through the reconciler's
	// Restore (internal/revert); rollbackHook, when set, hears of each
	// rollback recorded.
	rollback     bool
	rollbackHook RollbackHook
	// promotion is what an apply does with an Argo Rollouts Rollout paused
	// at a step (environments.<env>.rollouts.promote), named with who
	// approved the plan.
	promotion reconcile.Promotion
	// recorded, when set, hears after each pass and decision that the records may have changed.
	recorded RecordHook
	// approvals counts approvals under the environment's policy (internal/tally).
	approvals *tally.Counter
	metrics   *meter.Metrics
	log       logr.Logger
	now       func() time.Time
	// sequence is how the environment's delivery sequence runs: its
	// Pipeline, Tasks, CheckTask and Listener (the worker fills in the rest).
	sequence delivery.Config
	// reportBackoff and reportBackoffMax space the reports of outcomes the
	// gate refused (internal/outbox).
	reportBackoff, reportBackoffMax time.Duration
	// resync is how often to plan without a new revision (0: never);
	// repropose how often a plan still pending is proposed again; applyGrace
	// how long an apply may go on after shutdown begins.
	resync, repropose, applyGrace time.Duration
}

// worker handles one environment: revisions in order, one step at a time.
type worker struct {
	workerDeps
	wake      chan struct{}
	decisions chan pass.Decision
	// lastStatus is the last status written, without its observation time.
	lastStatus []byte
	// tell is what the gate is told, and what it was told last.
	tell *herald.Herald
	// apply carries out what a pass or a decision lets through; release
	// is the release approval; desk takes the decisions.
	apply   *deploy.Applier
	release *release.Releaser
	desk    *decision.Desk
	keeper  *gate.Keeper
	// seq is the sequence run of the newest plan (also kept in the state).
	seq *delivery.Run
	// owed are the outcomes the gate refused, reported again later.
	owed *outbox.Queue
	// windows are the environment's deploy windows.
	windows *window.Guard
	// reverter rolls back a failed apply (with rollback set).
	reverter *revert.Reverter
	// rec calls the record hook, after each pass and decision and when the
	// phase moves during one.
	rec *recorder
}

func newWorker(deps workerDeps) *worker {
	w := &worker{workerDeps: deps, wake: make(chan struct{}, 1), decisions: make(chan pass.Decision),
		rec: newRecorder(deps.recorded, deps.env, deps.store.Store)}
	// The rooms and helpers read the store in force at each call: each
	// term of the worker fences it anew (Daemon.workEnvironment).
	store := &w.store
	room := pass.Room{Env: deps.env, Log: deps.log, Now: deps.now, Metrics: deps.metrics, Store: store}
	c := deps.sequence
	c.Env, c.Store, c.Now, c.Log = deps.env, store, deps.now, deps.log
	c.Failed = func() { w.metrics.Fail(w.env, meter.ReasonState) }
	c.Moved = w.rec.moved
	w.seq = delivery.New(c)
	w.owed = outbox.New(outbox.Config{Env: deps.env, Store: store, Gate: deps.gate, Counter: deps.metrics.Reports(deps.env),
		Now: deps.now, Log: deps.log, Backoff: deps.reportBackoff, BackoffMax: deps.reportBackoffMax})
	w.tell = herald.New(herald.Config{Env: deps.env, Gate: deps.gate, Owed: w.owed, Metrics: deps.metrics, Log: deps.log, Now: deps.now,
		Repropose: deps.repropose})
	w.windows = window.New(window.Config{Env: deps.env, Calendar: deps.calendar, Now: deps.now, Store: store, Gate: deps.gate,
		Log: deps.log, GateFailed: func() { w.metrics.Fail(w.env, meter.ReasonGate) }})
	w.windows.OnOpen(w.WakeUp)
	w.reverter = revert.New(revert.Config{Env: deps.env, Targets: deps.targets, LockPath: deps.lockPath, Store: store,
		Restore: func(ctx context.Context, req reconcile.Request, undo reconcile.Undo, opts ...reconcile.Option) (*reconcile.Result, error) {
			return w.reconciler.Restore(ctx, req, undo, opts...)
		},
		Grace:     func(ctx context.Context) (context.Context, context.CancelFunc) { return graceful(ctx, w.applyGrace) },
		Completed: w.tell.Completed, Hook: deps.rollbackHook, Now: deps.now, Log: deps.log, Moved: w.rec.moved,
		Failed: func(f revert.Failure) {
			if f == revert.FailedRollback {
				w.metrics.Fail(w.env, meter.ReasonRollback)
				return
			}
			w.metrics.Fail(w.env, meter.ReasonState)
		}})
	w.release = release.New(release.Config{Room: room, Seq: w.seq,
		Tell: w.tell, Gate: deps.gate, Approvals: deps.approvals, Manifests: deps.manifests, Passes: w})
	w.apply = deploy.New(deploy.Config{Room: room,
		Reconciler: deps.reconciler, Request: w.request, Promotion: deps.promotion,
		Grace: func(ctx context.Context) (context.Context, context.CancelFunc) { return graceful(ctx, w.applyGrace) },
		Seq:   w.seq, Tell: w.tell, Release: w.release, Moved: w.rec.moved, Reverter: w.reverter, Rollback: deps.rollback, Wake: w.WakeUp})
	w.keeper = gate.New(gate.Config{Room: room, Tracer: deps.tracer,
		Source: deps.source, Manifests: deps.manifests, Approvals: deps.approvals, Windows: w.windows, Seq: w.seq, Tell: w.tell,
		Gate: deps.gate, AllowRewrite: deps.allowRewrite, Apply: w.apply, Release: w.release, Passes: w})
	w.desk = decision.New(decision.Config{Room: room, Tracer: deps.tracer,
		Source: deps.source, Manifests: deps.manifests, Approvals: deps.approvals, Windows: w.windows, Seq: w.seq, Tell: w.tell,
		Release: w.release, Passes: w, Keeper: w.keeper})
	return w
}

// WakeUp asks the worker to plan the newest snapshot; wake-ups coalesce.
func (w *worker) WakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run handles wake-ups, resyncs and decisions until ctx ends.
func (w *worker) run(ctx context.Context) {
	defer w.windows.Stop()
	var tick <-chan time.Time
	if w.resync > 0 {
		t := time.NewTicker(w.resync)
		defer t.Stop()
		tick = t.C
	}
	if _, ok := w.source.Latest(); ok {
		w.WakeUp() // leading again: the state may hold a pending plan or an interrupted apply
	}
	handed := time.NewTicker(time.Second)
	defer handed.Stop()
	defer w.rec.follow(ctx, w.store.Store)()
	for {
		select {
		case <-ctx.Done():
			return
		case dc := <-w.decisions:
			w.desk.Decide(ctx, dc)
			w.rec.tell(ctx)
			continue
		case <-handed.C:
			if w.desk.PickUp(ctx) {
				w.rec.tell(ctx) // a decision handed over: the records changed as after one taken here
			}
			w.owed.ReportDue(ctx)
			continue
		case <-w.wake:
		case <-tick:
		}
		w.PassAndLog(ctx)
		w.rec.tell(ctx)
	}
}

// graceful is ctx, but cancelled only grace after ctx ends, so that patches
// in flight finish and the state is recorded; at once when ctx ended because
// this replica lost its Lease (lease.ErrLost): another replica may be
// applying already, and no patch may follow.
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			cancel()
			return
		}
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(gctx, func() { t.Stop() })
	})
	return gctx, func() { stop(); cancel() }
}
