package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/window"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
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
	metrics   *Metrics
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
	// proposed is the pending plan (revision and planHash) the gate last
	// accepted, at proposedAt; a pending plan the gate has not accepted
	// (Propose failed, or a restart) is proposed again at each pass, and one
	// it accepted again after WithRepropose's period, so that the gate can
	// repair what it shows (a check run whose click was lost with its replica).
	proposed   string
	proposedAt time.Time
	// seq is the sequence run of the newest plan (also kept in the state).
	seq *delivery.Run
	// rateLimited is the gate's last refusal for a rate limit (nil once
	// a Propose went through); the status names it until it ends.
	rateLimited *approval.RateLimitedError
	// releaseHash is the plan whose release approval began to wait in
	// this process at releaseSince (local, monotonic): a decision sent to
	// the worker before then is not for it.
	releaseHash  string
	releaseSince time.Time
	// waitMark is the same, for the Daemon's goroutines (a decision the
	// busy worker did not take in time is handed over, see
	// Daemon.decide), set before the pending release is written.
	waitMark atomic.Pointer[releaseMark]
	// owed are the outcomes the gate refused, reported again later.
	owed *outbox.Queue
	// windows are the environment's deploy windows.
	windows *window.Guard
	// glass is the break-glasses' record as the last glance saw it (pickUp): a change, another
	// replica keeping a break-glass, wakes the worker.
	glass string
	// reverter rolls back a failed apply (with rollback set).
	reverter *revert.Reverter
	// applying is true while an apply is under way (read by other
	// goroutines: a replica gives back an environment that is not applying).
	applying atomic.Bool
	// kept names the pending plan the last pass kept at a newer revision
	// that changes nothing here, and that revision (keepPending); a
	// decision on it is taken at the plan's revision.
	kept string
	// keptEnv is the pending plan's environment resolved at its revision
	// when kept was decided: both revisions' content never changes, so a
	// later pass with the same key neither resolves nor compares again.
	keptEnv *manifest.Environment
	// rec calls the record hook, after each pass and decision and when the
	// phase moves during one.
	rec *recorder
}

// releaseMark is when a release approval of planHash began to wait in this
// process (local, monotonic).
type releaseMark struct {
	planHash string
	since    time.Time
}

// takenBefore reports whether a decision taken at at (on this process's
// monotonic clock; zero: another replica's) on p was taken before p, a
// release approval, began to wait here: it was for the plan before its
// deployment, not for its release.
func (w *worker) takenBefore(p *approval.Pending, at time.Time) bool {
	m := w.waitMark.Load()
	return p != nil && p.Release && !at.IsZero() && m != nil && m.planHash == p.PlanHash && at.Before(m.since)
}

func newWorker(deps workerDeps) *worker {
	w := &worker{workerDeps: deps, wake: make(chan struct{}, 1), decisions: make(chan decision),
		rec: newRecorder(deps.recorded, deps.env, deps.store.Store)}
	store := termStore{w}
	c := deps.sequence
	c.Env, c.Store, c.Now, c.Log = deps.env, store, deps.now, deps.log
	c.Failed = func() { w.metrics.fail(w.env, reasonState) }
	c.Moved = w.rec.moved
	w.seq = delivery.New(c)
	w.owed = outbox.New(outbox.Config{Env: deps.env, Store: store, Gate: deps.gate, Counter: envCounter{deps.metrics, deps.env},
		Now: deps.now, Log: deps.log, Backoff: deps.reportBackoff, BackoffMax: deps.reportBackoffMax})
	w.windows = window.New(window.Config{Env: deps.env, Calendar: deps.calendar, Now: deps.now, Store: store, Gate: deps.gate,
		Log: deps.log, GateFailed: func() { w.metrics.fail(w.env, reasonGate) }})
	w.windows.OnOpen(w.wakeUp)
	w.reverter = revert.New(revert.Config{Env: deps.env, Targets: deps.targets, LockPath: deps.lockPath, Store: store,
		Restore: func(ctx context.Context, req reconcile.Request, changes []reconcile.Change, reason string, opts ...reconcile.Option) (*reconcile.Result, error) {
			return w.reconciler.Restore(ctx, req, changes, reason, opts...)
		},
		Grace:     func(ctx context.Context) (context.Context, context.CancelFunc) { return graceful(ctx, w.applyGrace) },
		Completed: w.completed, Hook: deps.rollbackHook, Now: deps.now, Log: deps.log, Moved: w.rec.moved,
		Failed: func(f revert.Failure) {
			if f == revert.FailedRollback {
				w.metrics.fail(w.env, reasonRollback)
				return
			}
			w.metrics.fail(w.env, reasonState)
		}})
	return w
}

// termStore is the worker's store as it is at each call: each term of the
// worker fences it anew (Daemon.work), and the rooms the worker drives
// (delivery.Run, outbox.Queue) write under the term in force.
type termStore struct{ w *worker }

func (s termStore) Load(ctx context.Context, env string) (*state.EnvState, error) {
	return s.w.store.Load(ctx, env)
}

func (s termStore) HistoryLimit() int { return s.w.store.HistoryLimit() }

func (s termStore) Update(ctx context.Context, env string, mutate func(*state.EnvState)) error {
	return s.w.store.Update(ctx, env, mutate)
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
			w.decide(ctx, dc)
			w.rec.tell(ctx)
			continue
		case <-handed.C:
			if w.pickUp(ctx) {
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

// resumable reports whether prop continues the interrupted apply in
// flight in st (cut short by a shutdown) without asking again: same
// revision, and what is left is part of what was approved; it returns its
// approvers. Otherwise it clears the in-flight record (in st too).
func (w *worker) resumable(ctx context.Context, st *state.EnvState, prop approval.Proposal) ([]string, bool, error) {
	f := st.InFlight
	if f == nil {
		return nil, false, nil
	}
	var approved []reconcile.Change
	if err := json.Unmarshal(f.Changes, &approved); err != nil {
		// Unreadable: nothing can be continued without asking again.
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "decoding the changes of the interrupted apply; planning afresh", "environment", w.env, "planHash", f.PlanHash)
	} else if f.Revision == prop.Revision && subset(prop.Plan.Changes, approved) {
		if len(f.Approvers) == 0 { // written before approvals were counted
			return []string{f.Approver}, true, nil
		}
		return f.Approvers, true, nil
	}
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, notApplying(st) }); err != nil {
		return nil, false, err
	}
	st.InFlight, st.Phase = nil, notApplying(st)
	return nil, false, nil
}

// propose asks gate about prop and remembers a plan it accepted, so that a
// plan whose Propose failed is proposed again at the next pass. A failure is
// logged and counted and leaves the plan pending.
func (w *worker) propose(ctx context.Context, gate approval.Gate, prop approval.Proposal) approval.Decision {
	dec, err := gate.Propose(ctx, prop)
	var rl *approval.RateLimitedError
	if errors.As(err, &rl) {
		w.rateLimited = rl
	} else if err == nil {
		w.rateLimited = nil
	}
	if err != nil {
		w.proposed = ""
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "proposing plan; proposing it again at the next pass", "environment", w.env,
			"revision", short(prop.Revision), "planHash", prop.Plan.PlanHash)
		return dec
	}
	w.proposed, w.proposedAt = proposalKey(prop), w.now()
	return dec
}

func proposalKey(p approval.Proposal) string { return p.Revision + " " + p.Plan.PlanHash }

// supersede withdraws st's pending plan (if any): by is the revision that
// replaces it. st is the pass's state, kept in step.
func (w *worker) supersede(ctx context.Context, st *state.EnvState, by string) {
	pending := st.Pending
	if pending == nil || st.Phase == status.PhaseAwaitingRelease {
		// A release approval ends by a decision or a newer revision
		// (holdRelease), never with the plan that found it.
		return
	}
	plan, perr := decodePlan(w.env, pending)
	if perr != nil {
		// The gate still hears of it, by revision alone.
		w.metrics.fail(w.env, reasonState)
		w.log.Error(perr, "decoding the superseded plan", "environment", w.env, "planHash", pending.PlanHash)
	}
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == pending.PlanHash {
			st.Pending = nil
			if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
				st.Phase = st.AtRest()
			}
		}
	}); err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "clearing superseded plan", "environment", w.env)
		return
	}
	st.Pending = nil
	if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
		st.Phase = st.AtRest()
	}
	if by != pending.Revision {
		w.seq.Abort(ctx, st, delivery.SupersededWhy(by))
	}
	prop := approval.Proposal{Environment: w.env, Revision: pending.Revision, Plan: plan}
	if err := w.gate.Superseded(ctx, prop, by); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "reporting superseded plan", "environment", w.env, "planHash", pending.PlanHash)
		w.owed.Owe(ctx, outbox.Superseded(prop, by), err)
	}
	w.log.Info("pending plan superseded", "environment", w.env, "planHash", pending.PlanHash, "by", by)
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
	return fmt.Sprint(len(msgs), " workload(s) not deployed: ", joinMax(msgs, 5))
}

func joinMax(ss []string, n int) string {
	out := ""
	for i, s := range ss {
		if i == n {
			return out + fmt.Sprintf("; and %d more", len(ss)-n)
		}
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// recordLanded records an approved apply whose every patch landed before its
// process ended: killed (no entry), or stopped while it watched the rollouts
// (an interrupted entry, the in-flight record kept for the next leader, as a
// rolling upgrade leaves it). The plan is empty now, and without this the
// approval, its approvers and its changes would leave no history entry but
// the interruption, and no completed check run. Its rollouts were not
// watched to the end, and the entry says so.
func (w *worker) recordLanded(ctx context.Context, p *pass) {
	s, envM, st := p.snap, p.envM, p.st
	f := st.InFlight
	settled := func(e approval.Entry) bool { return e.PlanHash == f.PlanHash && e.Result != approval.ResultInterrupted }
	if f == nil || f.Revision != s.Revision || slices.ContainsFunc(st.History, settled) {
		return
	}
	var changes []reconcile.Change
	if err := json.Unmarshal(f.Changes, &changes); err != nil {
		w.log.Error(err, "decoding the changes of the apply in flight", "environment", w.env)
		return
	}
	plan := &reconcile.Plan{Environment: w.env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	prop := approval.Proposal{Environment: w.env, Revision: f.Revision, RevisionTime: s.Time, Plan: plan}
	out := approval.Outcome{Result: approval.ResultSucceeded, Approver: f.Approver, Approvers: f.Approvers, Started: f.Started,
		Finished: w.now().UTC(),
		Message:  "the apply was cut short after its last patch (the process ended); every approved change is in place, its rollouts were not watched to the end"}
	w.log.Info("recording an apply whose patches all landed before its process ended", "environment", w.env,
		"revision", short(f.Revision), "planHash", f.PlanHash)
	w.recordApply(ctx, prop, out, resolvedManifest(s, envM))
	w.completed(ctx, prop, out)
}
