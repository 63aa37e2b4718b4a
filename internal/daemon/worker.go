package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// worker handles one environment: revisions in order, one step at a time.
type worker struct {
	d         *Daemon
	env       string
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
}

func newWorker(d *Daemon, env string) *worker {
	return &worker{d: d, env: env, wake: make(chan struct{}, 1), decisions: make(chan decision)}
}

// wakeUp asks the worker to plan the newest snapshot; wake-ups coalesce.
func (w *worker) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) resync() time.Duration {
	switch {
	case w.d.o.resync != 0:
		return w.d.o.resync
	case w.d.cfg.Source.Interval.Duration > 0:
		return w.d.cfg.Source.Interval.Duration
	default:
		return time.Minute
	}
}

// run handles wake-ups, resyncs and decisions until ctx ends.
func (w *worker) run(ctx context.Context) {
	var tick <-chan time.Time
	if d := w.resync(); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	if _, ok := w.d.snapshot(); ok {
		w.wakeUp() // leading again: the state may hold a pending plan or an interrupted apply
	}
	handed := time.NewTicker(time.Second)
	defer handed.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case dc := <-w.decisions:
			w.decide(ctx, dc)
			continue
		case <-handed.C:
			w.pickUp(ctx)
			continue
		case <-w.wake:
		case <-tick:
		}
		if err := w.pass(ctx); err != nil && ctx.Err() == nil {
			w.d.log.Error(err, "reconciling environment", "environment", w.env)
		}
	}
}

// pass plans the newest snapshot and acts on the plan: apply (skipConfirmation,
// or an interrupted approved apply), propose, or nothing.
func (w *worker) pass(ctx context.Context) error {
	s, ok := w.d.snapshot()
	if !ok {
		return nil
	}
	start := time.Now()
	result := "ok"
	defer func() { w.d.metrics.observePass(w.env, result, time.Since(start)) }()
	st, err := w.d.store.Load(ctx, w.env)
	if err != nil {
		result = "error"
		w.d.metrics.fail(w.env, "state")
		return err
	}
	envM, plan, err := w.plan(ctx, s)
	if err != nil {
		result = "error"
		// The pending plan, if any, is not for the newest revision any more.
		w.supersede(ctx, st.Pending, s.Revision)
		return err
	}
	if err := w.act(ctx, s, envM, plan, st); err != nil {
		result = "error"
		return err
	}
	return nil
}

// plan resolves and plans env at s and records the status.
func (w *worker) plan(ctx context.Context, s gitsource.Snapshot) (*manifest.Environment, *reconcile.Plan, error) {
	envM, err := w.d.resolve(ctx, s, w.env)
	if err != nil {
		w.d.metrics.fail(w.env, "resolve")
		w.writeStatus(ctx, s, nil, nil, err)
		return nil, nil, fmt.Errorf("resolving manifest at %s: %w", short(s.Revision), err)
	}
	plan, err := w.d.rec.Plan(ctx, w.request(s, envM))
	if err != nil {
		w.d.metrics.fail(w.env, "plan")
		w.writeStatus(ctx, s, envM, nil, err)
		return nil, nil, fmt.Errorf("planning revision %s: %w", short(s.Revision), err)
	}
	w.writeStatus(ctx, s, envM, plan, nil)
	return envM, plan, nil
}

func (w *worker) request(s gitsource.Snapshot, envM *manifest.Environment) reconcile.Request {
	return reconcile.Request{Environment: envM, Revision: s.Revision, Targets: w.d.targets[w.env],
		LockPath: w.d.cfg.Environments[w.env].LockPath}
}

func (w *worker) act(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, plan *reconcile.Plan, st *EnvState) error {
	log := w.d.log.WithValues("environment", w.env, "revision", short(s.Revision))
	if plan.Empty() {
		w.supersede(ctx, st.Pending, "")
		if st.InFlight != nil {
			if err := w.d.store.SetInFlight(ctx, w.env, nil); err != nil {
				return err
			}
		}
		w.d.metrics.setPending(w.env, false)
		return nil
	}
	prop := approval.Proposal{Environment: w.env, Revision: s.Revision, RevisionTime: s.Time, Plan: plan}
	if approver, resume, err := w.resumable(ctx, st.InFlight, prop); err != nil || resume {
		if err != nil {
			return err
		}
		log.Info("continuing an interrupted apply", "approver", approver, "changes", len(plan.Changes))
		return w.apply(ctx, s, envM, prop, approver)
	}
	gate := w.d.o.gate
	if envM.SkipConfirmation {
		gate = approval.Auto()
	}
	if p := st.Pending; p != nil && p.PlanHash == plan.PlanHash && p.Revision == s.Revision {
		w.d.metrics.setPending(w.env, true)
		if w.proposed == proposalKey(prop) && time.Since(w.proposedAt) < w.d.o.repropose {
			return nil // proposed already; waiting for a decision
		}
		// Stored but not (yet) accepted by the gate: GitHub was down when it
		// was proposed, or this process is new; or it was proposed a
		// repropose period ago. Gates' Propose is idempotent.
		if dec := w.propose(ctx, gate, prop); dec.Approved {
			return w.apply(ctx, s, envM, prop, dec.Approver)
		}
		return nil
	}
	w.supersede(ctx, st.Pending, s.Revision)
	if !envM.SkipConfirmation {
		raw, err := json.Marshal(plan)
		if err != nil {
			return fmt.Errorf("encoding plan: %w", err)
		}
		p := &approval.Pending{Revision: s.Revision, PlanHash: plan.PlanHash, Plan: raw, ProposedAt: time.Now().UTC()}
		if err := w.d.store.SetPending(ctx, w.env, p); err != nil {
			w.d.metrics.fail(w.env, "state")
			return err
		}
	}
	if dec := w.propose(ctx, gate, prop); dec.Approved {
		return w.apply(ctx, s, envM, prop, dec.Approver)
	}
	w.d.metrics.setPending(w.env, true)
	log.Info("plan waiting for approval", "planHash", plan.PlanHash, "changes", len(plan.Changes))
	return nil
}

// resumable reports whether prop continues the interrupted apply f (cut
// short by a shutdown) without asking again: same revision, and what is left
// is part of what was approved; it returns f's approver. Otherwise it clears
// the in-flight record.
func (w *worker) resumable(ctx context.Context, f *approval.InFlight, prop approval.Proposal) (string, bool, error) {
	if f == nil {
		return "", false, nil
	}
	var approved []reconcile.Change
	_ = json.Unmarshal(f.Changes, &approved)
	if f.Revision == prop.Revision && subset(prop.Plan.Changes, approved) {
		return f.Approver, true, nil
	}
	return "", false, w.d.store.SetInFlight(ctx, w.env, nil)
}

// propose asks gate about prop and remembers a plan it accepted, so that a
// plan whose Propose failed is proposed again at the next pass. A failure is
// logged and counted and leaves the plan pending.
func (w *worker) propose(ctx context.Context, gate approval.Gate, prop approval.Proposal) approval.Decision {
	dec, err := gate.Propose(ctx, prop)
	if err != nil {
		w.proposed = ""
		w.d.metrics.fail(w.env, "gate")
		w.d.log.Error(err, "proposing plan; proposing it again at the next pass", "environment", w.env,
			"revision", short(prop.Revision), "planHash", prop.Plan.PlanHash)
		return dec
	}
	w.proposed, w.proposedAt = proposalKey(prop), time.Now()
	return dec
}

func proposalKey(p approval.Proposal) string { return p.Revision + " " + p.Plan.PlanHash }

// supersede withdraws pending (if any): by is the revision that replaces it.
func (w *worker) supersede(ctx context.Context, pending *approval.Pending, by string) {
	if pending == nil {
		return
	}
	var plan reconcile.Plan
	_ = json.Unmarshal(pending.Plan, &plan)
	if err := w.d.store.Update(ctx, w.env, func(st *EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == pending.PlanHash {
			st.Pending = nil
		}
	}); err != nil {
		w.d.metrics.fail(w.env, "state")
		w.d.log.Error(err, "clearing superseded plan", "environment", w.env)
		return
	}
	w.d.metrics.setPending(w.env, false)
	prop := approval.Proposal{Environment: w.env, Revision: pending.Revision, Plan: &plan}
	if err := w.d.o.gate.Superseded(ctx, prop, by); err != nil {
		w.d.metrics.fail(w.env, "gate")
		w.d.log.Error(err, "reporting superseded plan", "environment", w.env, "planHash", pending.PlanHash)
	}
	w.d.log.Info("pending plan superseded", "environment", w.env, "planHash", pending.PlanHash, "by", by)
}

// apply applies prop's plan, recording it as in flight first and in the
// history after. A shutdown lets the patches in flight finish (up to the
// apply grace) and records the apply as interrupted; the in-flight record
// lets the next leader continue what is left without asking again.
func (w *worker) apply(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, prop approval.Proposal, approver string) error {
	log := w.d.log.WithValues("environment", w.env, "revision", short(s.Revision), "planHash", prop.Plan.PlanHash)
	started := time.Now().UTC()
	if err := w.d.store.SetInFlight(ctx, w.env, &approval.InFlight{Revision: s.Revision, PlanHash: prop.Plan.PlanHash,
		Approver: approver, Changes: changesJSON(prop.Plan.Changes), Started: started}); err != nil {
		w.d.metrics.fail(w.env, "state")
		return fmt.Errorf("recording apply before starting it: %w", err)
	}
	log.Info("applying", "approver", approver, "changes", len(prop.Plan.Changes))
	res, err := w.applyWithGrace(ctx, w.request(s, envM), prop.Plan.PlanHash)
	out := outcome(approver, res, err, ctx.Err() != nil, started)
	// Record and report even when ctx has ended (a shutdown).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()

	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) {
		log.Info("plan changed before it could be applied; planning again", "now", stale.Got)
		if err := w.d.store.SetInFlight(rctx, w.env, nil); err != nil {
			return err
		}
		if out.Result == approval.ResultInterrupted {
			return nil
		}
		st, err := w.d.store.Load(ctx, w.env)
		if err != nil {
			return err
		}
		if st.Pending != nil && st.Pending.PlanHash == prop.Plan.PlanHash {
			st.Pending = nil // approved and now stale: propose the new plan
		}
		return w.act(ctx, s, envM, stale.Plan, st)
	}

	applied := w.recordApply(rctx, prop, out)
	w.completed(rctx, prop, out)
	log.Info("applied", "result", out.Result, "changes", applied, "duration", out.Finished.Sub(started).String())
	switch out.Result {
	case approval.ResultFailed:
		w.d.metrics.fail(w.env, "apply")
		return fmt.Errorf("applying revision %s: %s", short(s.Revision), out.Message)
	case approval.ResultSucceeded:
		_, _, _ = w.plan(ctx, s) // refresh the status: desired is live now
	}
	return nil
}

// applyWithGrace applies planHash; when ctx ends, the patches in flight get
// the apply grace to finish before the apply is cancelled.
func (w *worker) applyWithGrace(ctx context.Context, req reconcile.Request, planHash string) (*reconcile.Result, error) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.d.o.applyGrace, cancel)
		context.AfterFunc(actx, func() { t.Stop() })
	})
	defer stop()
	return w.d.rec.Apply(actx, req, planHash)
}

// outcome is how an apply that started at started ended.
func outcome(approver string, res *reconcile.Result, err error, interrupted bool, started time.Time) approval.Outcome {
	out := approval.Outcome{Approver: approver, Apply: res, Started: started, Finished: time.Now().UTC(), Result: approval.ResultSucceeded}
	switch {
	case interrupted:
		out.Result, out.Message = approval.ResultInterrupted, "shut down during the apply; the next leader plans again and applies what is left"
	case err != nil:
		out.Result, out.Message = approval.ResultFailed, err.Error()
	case res.Failed():
		out.Result, out.Message = approval.ResultFailed, failureSummary(res)
	}
	return out
}

// recordApply writes out into the history (clearing the in-flight record
// unless the apply was interrupted: the next leader continues it) and the
// metrics, and returns the number of changes applied.
func (w *worker) recordApply(ctx context.Context, prop approval.Proposal, out approval.Outcome) int {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: out.Approver,
		Result: out.Result, Message: out.Message, Started: out.Started, Finished: out.Finished}
	applied := 0
	if out.Apply != nil {
		e.Workloads, _ = json.Marshal(out.Apply.Workloads)
		for _, wr := range out.Apply.Workloads {
			if wr.Outcome.Applied() {
				applied += len(wr.Changes)
			}
		}
	}
	w.d.metrics.addApplied(w.env, applied)
	var err error
	if out.Result == approval.ResultInterrupted {
		err = w.d.store.Update(ctx, w.env, func(st *EnvState) {
			st.History = append([]approval.Entry{e}, st.History...)
			if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
				st.Pending = nil
			}
		})
	} else {
		err = w.d.store.Record(ctx, w.env, e)
	}
	if err != nil {
		w.d.metrics.fail(w.env, "state")
		w.d.log.Error(err, "recording apply result", "environment", w.env, "planHash", e.PlanHash)
	}
	w.d.metrics.setPending(w.env, false)
	return applied
}

// completed reports how prop ended to the gate; a failure is logged and counted.
func (w *worker) completed(ctx context.Context, prop approval.Proposal, out approval.Outcome) {
	if err := w.d.o.gate.Completed(ctx, prop, out); err != nil {
		w.d.metrics.fail(w.env, "gate")
		w.d.log.Error(err, "reporting the outcome to the gate", "environment", w.env, "planHash", prop.Plan.PlanHash, "result", out.Result)
	}
}

// subset reports whether every change in part was approved in whole: same
// workload, container and target image (the running image, From, may differ
// when an apply was cut short).
func subset(part, whole []reconcile.Change) bool {
	type key struct {
		w         reconcile.WorkloadKey
		container string
		to        string
	}
	in := make(map[key]bool, len(whole))
	for _, c := range whole {
		in[key{c.Key(), c.Container, c.To}] = true
	}
	for _, c := range part {
		if !in[key{c.Key(), c.Container, c.To}] {
			return false
		}
	}
	return true
}

func changesJSON(cs []reconcile.Change) json.RawMessage {
	if cs == nil {
		cs = []reconcile.Change{}
	}
	b, _ := json.Marshal(cs)
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
