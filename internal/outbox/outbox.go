package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

const (
	// MaxKept is how many outcomes wait per environment at most.
	MaxKept = 8
	// MaxAttempts is how many times an outcome is reported before it is given up.
	MaxAttempts = 30

	// KindCompleted and KindSuperseded are the kinds of state.Unreported.
	KindCompleted  = "completed"
	KindSuperseded = "superseded"
)

// Store is where the outcomes wait: the environment's state.
type Store interface {
	Load(ctx context.Context, env string) (*state.EnvState, error)
	Update(ctx context.Context, env string, mutate func(*state.EnvState)) error
}

// Counter hears what the queue does, for the metrics.
type Counter interface {
	// Waiting is how many outcomes wait now.
	Waiting(n int)
	// Dropped is an outcome given up.
	Dropped()
	// Failed is a state read or write (gate false) or a report (gate true) that failed.
	Failed(gate bool)
}

// Config is what a Queue uses.
type Config struct {
	Env     string
	Store   Store
	Gate    approval.Gate
	Counter Counter
	Now     func() time.Time
	Log     logr.Logger
	// Backoff and BackoffMax space the reports of one outcome.
	Backoff, BackoffMax time.Duration
}

// Queue is one environment's outcomes the gate refused. It is used by one
// goroutine, the environment's worker.
type Queue struct {
	c Config
	// at is when the outcomes are reported again; zero when none are known
	// to wait.
	at time.Time
}

// New is the Queue of c.Env.
func New(c Config) *Queue { return &Queue{c: c} }

// Completed is the Unreported of a Completed the gate refused.
func Completed(prop approval.Proposal, out approval.Outcome) state.Unreported {
	return state.Unreported{Kind: KindCompleted, Proposal: prop, Outcome: &out}
}

// Superseded is the Unreported of a Superseded the gate refused.
func Superseded(prop approval.Proposal, by string) state.Unreported {
	return state.Unreported{Kind: KindSuperseded, Proposal: prop, By: by}
}

// report tells the gate u.
func (q *Queue) report(ctx context.Context, u state.Unreported) error {
	switch u.Kind {
	case KindSuperseded:
		return q.c.Gate.Superseded(ctx, u.Proposal, u.By)
	case KindCompleted:
		if u.Outcome == nil {
			return fmt.Errorf("reporting the outcome of plan %s: no outcome kept", u.PlanHash())
		}
		return q.c.Gate.Completed(ctx, u.Proposal, *u.Outcome)
	}
	return fmt.Errorf("reporting plan %s: unknown kind %q", u.PlanHash(), u.Kind)
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Owe keeps u, which the gate refused with cause, for later passes; it
// replaces an outcome of the same plan kept before.
func (q *Queue) Owe(ctx context.Context, u state.Unreported, cause error) {
	env := q.c.Env
	u.ID, u.Attempts, u.LastError = newID(), 1, cause.Error()
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
	err := q.c.Store.Update(ctx, env, func(st *state.EnvState) {
		kept := make([]state.Unreported, 0, len(st.Unreported)+1)
		for _, o := range st.Unreported {
			if o.PlanHash() != u.PlanHash() {
				kept = append(kept, o)
			}
		}
		kept = append(kept, u)
		dropped = nil
		if n := len(kept) - MaxKept; n > 0 {
			dropped, kept = kept[:n], kept[n:]
		}
		st.Unreported, left = kept, len(kept)
	})
	if err != nil {
		q.c.Counter.Failed(false)
		q.c.Log.Error(err, "keeping an outcome the gate refused; it is lost", "environment", env, "planHash", u.PlanHash(), "kind", u.Kind)
		return
	}
	for _, d := range dropped {
		q.c.Counter.Dropped()
		q.c.Log.Error(nil, "dropping an unreported outcome: more than "+fmt.Sprint(MaxKept)+" wait", "environment", env,
			"planHash", d.PlanHash(), "kind", d.Kind, "lastError", d.LastError)
	}
	q.c.Counter.Waiting(left)
	q.schedule(1)
	q.c.Log.Info("outcome kept to report again", "environment", env, "planHash", u.PlanHash(), "kind", u.Kind, "in", q.at.Sub(q.c.Now()))
}

// schedule sets when the next report of what is owed is made, after
// attempts failed attempts.
func (q *Queue) schedule(attempts int) {
	d := q.c.Backoff
	for i := 1; i < attempts && d < q.c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, q.c.BackoffMax)
	now := q.c.Now()
	if at := now.Add(d); q.at.IsZero() || at.Before(q.at) || q.at.Before(now) {
		q.at = at
	}
}

// Note, called by each pass with the state it read, makes the queue report
// soon what another process (a leader before a restart) left unreported.
func (q *Queue) Note(st *state.EnvState) {
	q.c.Counter.Waiting(len(st.Unreported))
	switch {
	case len(st.Unreported) == 0:
		q.at = time.Time{}
	case q.at.IsZero():
		q.at = q.c.Now()
	}
}

// ReportDue reports again, when it is time, the outcomes the gate refused
// before (Report).
func (q *Queue) ReportDue(ctx context.Context) {
	if q.at.IsZero() || q.c.Now().Before(q.at) {
		return
	}
	q.Report(ctx)
}

// Report reports again the outcomes the gate refused before, oldest first,
// until one is refused again: each one the gate takes is removed from the
// state, the refusal counted, and one tried MaxAttempts times is given up.
func (q *Queue) Report(ctx context.Context) {
	env := q.c.Env
	q.at = time.Time{}
	st, err := q.c.Store.Load(ctx, env)
	if err != nil {
		q.c.Counter.Failed(false)
		q.c.Log.Error(err, "reading the outcomes to report again", "environment", env)
		q.schedule(1)
		return
	}
	results, ok := q.reportAll(ctx, st.Unreported)
	if !ok {
		return
	}
	var given []state.Unreported
	var left []state.Unreported
	err = q.c.Store.Update(ctx, env, func(st *state.EnvState) {
		given, left = settle(st.Unreported, results)
		st.Unreported = left
	})
	if err != nil {
		q.c.Counter.Failed(false)
		q.c.Log.Error(err, "recording the outcomes reported again", "environment", env)
		q.schedule(1)
		return
	}
	for _, r := range results {
		if r.err == nil {
			q.c.Log.Info("outcome reported after all", "environment", env, "planHash", r.u.PlanHash(), "kind", r.u.Kind,
				"attempts", r.u.Attempts+1)
		}
	}
	for _, g := range given {
		q.c.Counter.Dropped()
		q.c.Log.Error(nil, "giving up an unreported outcome", "environment", env, "planHash", g.PlanHash(), "kind", g.Kind,
			"attempts", g.Attempts, "lastError", g.LastError)
	}
	q.c.Counter.Waiting(len(left))
	if len(left) > 0 {
		attempts := left[0].Attempts
		for _, o := range left[1:] {
			attempts = min(attempts, o.Attempts)
		}
		q.schedule(attempts)
	}
}

// result is how the gate answered one report.
type result struct {
	u   state.Unreported
	err error
}

// reportAll reports us in order until the gate refuses one; ok is false
// when ctx ended first.
func (q *Queue) reportAll(ctx context.Context, us []state.Unreported) ([]result, bool) {
	var results []result
	for _, u := range us {
		if ctx.Err() != nil {
			return nil, false
		}
		if o := u.Outcome; o != nil && o.Apply != nil && o.Apply.Plan == nil {
			ap := *o.Apply
			ap.Plan = u.Proposal.Plan
			cp := *o
			cp.Apply = &ap
			u.Outcome = &cp
		}
		err := q.report(ctx, u)
		results = append(results, result{u, err})
		if err != nil {
			// Still refused: the others wait for the next attempt rather than hold up the worker for
			// another round of the client's retries each.
			q.c.Counter.Failed(true)
			break
		}
	}
	return results, true
}

// settle is what is left of kept once results are in: those the gate took
// removed, those it refused tried once more and moved to the back (one
// GitHub keeps refusing does not hold up the others), those tried
// MaxAttempts times given up.
func settle(kept []state.Unreported, results []result) (given, left []state.Unreported) {
	var refused []state.Unreported
	for _, o := range kept {
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
			if o.Attempts >= MaxAttempts {
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
	return given, append(left, refused...)
}
