package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/policy"
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
	store phaseStore
	// gate is told about every plan (Auto replaces it to decide for
	// skipConfirmation environments, but it still hears Superseded and Completed).
	gate approval.Gate
	// reconciler plans, applies and restores in targets, under the locks
	// of lockPath (the environment's).
	reconciler reconciler
	targets    []reconcile.Target
	lockPath   string
	// statusTargets are the configured targets the status lists.
	statusTargets []config.Target
	// manifests resolves the environment's manifest and the notes shown
	// beside a proposal (nil: none).
	manifests manifests
	// source is where revisions come from (the Daemon's snapshots); unless
	// allowRewrite, a plan whose revision does not descend from the last
	// applied one needs an approval even in a skipConfirmation environment.
	source       source
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
	decisions chan decision
	// lastStatus is the last status written, without its observation time.
	lastStatus []byte
	// tell is what the gate is told, and what it was told last.
	tell *herald.Herald
	// apply carries out what a pass or a decision lets through; release
	// is the release approval; desk takes the decisions.
	apply   *applier
	release *releaser
	desk    *decider
	keeper  *gatekeeper
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
	w := &worker{workerDeps: deps, wake: make(chan struct{}, 1), decisions: make(chan decision),
		rec: newRecorder(deps.recorded, deps.env, deps.store.Store)}
	// The rooms and helpers read the store in force at each call: each
	// term of the worker fences it anew (Daemon.workEnvironment).
	store := &w.store
	c := deps.sequence
	c.Env, c.Store, c.Now, c.Log = deps.env, store, deps.now, deps.log
	c.Failed = func() { w.metrics.Fail(w.env, reasonState) }
	c.Moved = w.rec.moved
	w.seq = delivery.New(c)
	w.owed = outbox.New(outbox.Config{Env: deps.env, Store: store, Gate: deps.gate, Counter: deps.metrics.Reports(deps.env),
		Now: deps.now, Log: deps.log, Backoff: deps.reportBackoff, BackoffMax: deps.reportBackoffMax})
	w.tell = herald.New(herald.Config{Env: deps.env, Gate: deps.gate, Owed: w.owed, Metrics: deps.metrics, Log: deps.log, Now: deps.now,
		Repropose: deps.repropose})
	w.windows = window.New(window.Config{Env: deps.env, Calendar: deps.calendar, Now: deps.now, Store: store, Gate: deps.gate,
		Log: deps.log, GateFailed: func() { w.metrics.Fail(w.env, reasonGate) }})
	w.windows.OnOpen(w.wakeUp)
	w.reverter = revert.New(revert.Config{Env: deps.env, Targets: deps.targets, LockPath: deps.lockPath, Store: store,
		Restore: func(ctx context.Context, req reconcile.Request, changes []reconcile.Change, reason string, opts ...reconcile.Option) (*reconcile.Result, error) {
			return w.reconciler.Restore(ctx, req, changes, reason, opts...)
		},
		Grace:     func(ctx context.Context) (context.Context, context.CancelFunc) { return graceful(ctx, w.applyGrace) },
		Completed: w.tell.Completed, Hook: deps.rollbackHook, Now: deps.now, Log: deps.log, Moved: w.rec.moved,
		Failed: func(f revert.Failure) {
			if f == revert.FailedRollback {
				w.metrics.Fail(w.env, reasonRollback)
				return
			}
			w.metrics.Fail(w.env, reasonState)
		}})
	w.release = &releaser{env: deps.env, log: deps.log, now: deps.now, metrics: deps.metrics, store: store, seq: w.seq, tell: w.tell, gate: deps.gate,
		approvals: deps.approvals, manifests: deps.manifests, passes: w}
	w.apply = &applier{env: deps.env, log: deps.log, now: deps.now, metrics: deps.metrics, store: store, reconciler: deps.reconciler,
		request: w.request, promotion: deps.promotion, applyGrace: deps.applyGrace, seq: w.seq, tell: w.tell, release: w.release,
		rec: w.rec, reverter: w.reverter, rollback: deps.rollback, wake: w.wakeUp}
	w.desk = &decider{env: deps.env, log: deps.log, now: deps.now, metrics: deps.metrics, tracer: deps.tracer, store: store,
		source: deps.source, manifests: deps.manifests, approvals: deps.approvals, windows: w.windows, seq: w.seq, tell: w.tell,
		release: w.release, passes: w}
	w.keeper = &gatekeeper{env: deps.env, log: deps.log, now: deps.now, metrics: deps.metrics, tracer: deps.tracer, store: store,
		source: deps.source, manifests: deps.manifests, approvals: deps.approvals, windows: w.windows, seq: w.seq, tell: w.tell,
		gate: deps.gate, allowRewrite: deps.allowRewrite, apply: w.apply, release: w.release, passes: w}
	w.desk.keeper = w.keeper
	return w
}

// wakeUp asks the worker to plan the newest snapshot; wake-ups coalesce.
func (w *worker) wakeUp() {
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
		w.wakeUp() // leading again: the state may hold a pending plan or an interrupted apply
	}
	handed := time.NewTicker(time.Second)
	defer handed.Stop()
	defer w.rec.follow(ctx, w.store.Store)()
	for {
		select {
		case <-ctx.Done():
			return
		case dc := <-w.decisions:
			w.desk.decide(ctx, dc)
			w.rec.tell(ctx)
			continue
		case <-handed.C:
			if w.desk.pickUp(ctx) {
				w.rec.tell(ctx) // a decision handed over: the records changed as after one taken here
			}
			w.owed.ReportDue(ctx)
			continue
		case <-w.wake:
		case <-tick:
		}
		w.passAndLog(ctx)
		w.rec.tell(ctx)
	}
}

// autoGate decides for skipConfirmation environments.
var autoGate = approval.Auto()

// decodePlan reads the plan of p, env's pending plan; when it cannot, it says why and returns
// a plan that has only p's environment, revision and planHash.
func decodePlan(env string, p *approval.Pending) (*reconcile.Plan, error) {
	var plan reconcile.Plan
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		return &reconcile.Plan{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash},
			fmt.Errorf("decoding the pending plan %s of environment %s: %w", p.PlanHash, env, err)
	}
	return &plan, nil
}

func changesJSON(cs []reconcile.Change) json.RawMessage {
	if cs == nil {
		cs = []reconcile.Change{}
	}
	b, err := json.Marshal(cs)
	if err != nil { // plain strings: cannot happen
		panic(fmt.Sprintf("encoding changes: %v", err))
	}
	return b
}

func failureSummary(res *reconcile.Result) string {
	var msgs []string
	for _, wr := range res.Workloads {
		if wr.Outcome == reconcile.OutcomeFailed || wr.Outcome == reconcile.OutcomeBlocked {
			msgs = append(msgs, fmt.Sprintf("%s %s: %s", wr.WorkloadKey, wr.Outcome, wr.Message))
		}
	}
	return fmt.Sprint(len(msgs), " workload(s) not deployed: ", approval.JoinMax(msgs, 5))
}
