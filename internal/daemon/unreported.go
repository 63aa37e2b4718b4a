package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// An outcome the gate could not report (GitHub still answering errors after
// its client's retries) would leave the plan's check run "in progress"
// forever, and prbot's requires.healthy would never see the result. So the
// worker keeps it in the environment's state (unreported.json) and reports
// it again on later passes, backing off, until the gate takes it; then it is
// removed. The state survives restarts and is what the next leader reads.
//
// Made durable: Completed (the end of an approved or rejected plan) and
// Superseded (a plan withdrawn). Not made durable: Started (overtaken by
// Completed) and Tally (shown again when the pending plan is proposed again,
// WithRepropose).
//
// Bounded: at most maxUnreported per environment (a newer one drops the
// oldest), each tried at most maxReportAttempts times, waiting
// reportBackoff·2ⁿ between attempts up to reportBackoffMax. What is given up
// is logged and counted (stagehand_outcome_reports_dropped_total).
// stagehand_outcome_reports_unreported says how many wait.
//
// A replica older than this knows nothing of unreported.json: a state write
// it makes (while a rolling upgrade runs) drops what was kept there.

const (
	maxUnreported     = 8
	maxReportAttempts = 30

	reportCompleted  = "completed"
	reportSuperseded = "superseded"
)

// report tells the gate u.
func (w *worker) report(ctx context.Context, u state.Unreported) error {
	switch u.Kind {
	case reportSuperseded:
		return w.gate.Superseded(ctx, u.Proposal, u.By)
	case reportCompleted:
		if u.Outcome == nil {
			return fmt.Errorf("reporting the outcome of plan %s: no outcome kept", u.PlanHash())
		}
		return w.gate.Completed(ctx, u.Proposal, *u.Outcome)
	}
	return fmt.Errorf("reporting plan %s: unknown kind %q", u.PlanHash(), u.Kind)
}

// owe keeps u, which the gate refused with err, for later passes; it
// replaces an outcome of the same plan kept before.
func (w *worker) owe(ctx context.Context, u state.Unreported, cause error) {
	u.ID, u.Attempts, u.LastError = handoverID(), 1, cause.Error()
	// Kept even when the worker is stopping (the gate's call may have failed for that): the next leader
	// reports it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if o := u.Outcome; o != nil && o.Apply != nil && o.Apply.Plan != nil && u.Proposal.Plan != nil &&
		o.Apply.Plan.PlanHash == u.Proposal.Plan.PlanHash {
		// The gate reports the proposal's plan when the result names none: keep the plan once.
		cp := *o
		ap := *o.Apply
		ap.Plan = nil
		cp.Apply = &ap
		u.Outcome = &cp
	}
	var dropped []state.Unreported
	var left int
	err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		q := make([]state.Unreported, 0, len(st.Unreported)+1)
		for _, o := range st.Unreported {
			if o.PlanHash() != u.PlanHash() {
				q = append(q, o)
			}
		}
		q = append(q, u)
		dropped = nil
		if n := len(q) - maxUnreported; n > 0 {
			dropped, q = q[:n], q[n:]
		}
		st.Unreported, left = q, len(q)
	})
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "keeping an outcome the gate refused; it is lost", "environment", w.env, "planHash", u.PlanHash(), "kind", u.Kind)
		return
	}
	for _, d := range dropped {
		w.metrics.reportDropped(w.env)
		w.log.Error(nil, "dropping an unreported outcome: more than "+fmt.Sprint(maxUnreported)+" wait", "environment", w.env,
			"planHash", d.PlanHash(), "kind", d.Kind, "lastError", d.LastError)
	}
	w.metrics.setUnreported(w.env, left)
	w.scheduleReport(1)
	w.log.Info("outcome kept to report again", "environment", w.env, "planHash", u.PlanHash(), "kind", u.Kind, "in", w.reportAt.Sub(w.now()))
}

// scheduleReport sets when the next report of what is owed is made, after
// attempts failed attempts.
func (w *worker) scheduleReport(attempts int) {
	d := w.reportBackoff
	for i := 1; i < attempts && d < w.reportBackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.reportBackoffMax)
	if at := w.now().Add(d); w.reportAt.IsZero() || at.Before(w.reportAt) || w.reportAt.Before(w.now()) {
		w.reportAt = at
	}
}

// noteUnreported, called by each pass with the state it read, makes the
// worker report soon what another process (a leader before a restart) left
// unreported.
func (w *worker) noteUnreported(st *state.EnvState) {
	w.metrics.setUnreported(w.env, len(st.Unreported))
	switch {
	case len(st.Unreported) == 0:
		w.reportAt = time.Time{}
	case w.reportAt.IsZero():
		w.reportAt = w.now()
	}
}

// reportOwed reports again, when it is time, the outcomes the gate refused
// before, oldest first, until one is refused again: each one the gate takes
// is removed from the state, the refusal counted, and one tried
// maxReportAttempts times is given up.
func (w *worker) reportOwed(ctx context.Context) {
	if w.reportAt.IsZero() || w.now().Before(w.reportAt) {
		return
	}
	w.reportAt = time.Time{}
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "reading the outcomes to report again", "environment", w.env)
		w.scheduleReport(1)
		return
	}
	type result struct {
		u   state.Unreported
		err error
	}
	var results []result
	for _, u := range st.Unreported {
		if ctx.Err() != nil {
			return
		}
		if o := u.Outcome; o != nil && o.Apply != nil && o.Apply.Plan == nil {
			ap := *o.Apply
			ap.Plan = u.Proposal.Plan
			cp := *o
			cp.Apply = &ap
			u.Outcome = &cp
		}
		err := w.report(ctx, u)
		results = append(results, result{u, err})
		if err != nil {
			// Still refused: the others wait for the next attempt rather than hold up the worker for
			// another round of the client's retries each.
			w.metrics.fail(w.env, reasonGate)
			break
		}
	}
	var given []state.Unreported
	var left []state.Unreported
	err = w.store.Update(ctx, w.env, func(st *state.EnvState) {
		given, left = nil, nil
		var refused []state.Unreported // go to the back: one GitHub keeps refusing does not hold up the others
		for _, o := range st.Unreported {
			keep, back := true, false
			for _, r := range results {
				if r.u.ID != o.ID {
					continue // not what was reported (replaced since)
				}
				if r.err == nil {
					keep = false
					break
				}
				o.Attempts++
				o.LastError = r.err.Error()
				back = true
				if o.Attempts >= maxReportAttempts {
					given, keep = append(given, o), false
				}
				break
			}
			switch {
			case keep && back:
				refused = append(refused, o)
			case keep:
				left = append(left, o)
			}
		}
		left = append(left, refused...)
		st.Unreported = left
	})
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording the outcomes reported again", "environment", w.env)
		w.scheduleReport(1)
		return
	}
	for _, r := range results {
		if r.err == nil {
			w.log.Info("outcome reported after all", "environment", w.env, "planHash", r.u.PlanHash(), "kind", r.u.Kind,
				"attempts", r.u.Attempts+1)
		}
	}
	for _, g := range given {
		w.metrics.reportDropped(w.env)
		w.log.Error(nil, "giving up an unreported outcome", "environment", w.env, "planHash", g.PlanHash(), "kind", g.Kind,
			"attempts", g.Attempts, "lastError", g.LastError)
	}
	w.metrics.setUnreported(w.env, len(left))
	if len(left) > 0 {
		attempts := left[0].Attempts
		for _, o := range left[1:] {
			attempts = min(attempts, o.Attempts)
		}
		w.scheduleReport(attempts)
	}
}

// unreportedOutcome is the Unreported of a Completed the gate refused.
func unreportedOutcome(prop approval.Proposal, out approval.Outcome) state.Unreported {
	return state.Unreported{Kind: reportCompleted, Proposal: prop, Outcome: &out}
}

// unreportedSuperseded is the Unreported of a Superseded the gate refused.
func unreportedSuperseded(prop approval.Proposal, by string) state.Unreported {
	return state.Unreported{Kind: reportSuperseded, Proposal: prop, By: by}
}
