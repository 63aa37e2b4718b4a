package window

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// Store is where the Deferred phase is written: the environment's state.
type Store interface {
	Update(ctx context.Context, env string, mutate func(*state.EnvState)) error
}

// Config is what a Guard uses.
type Config struct {
	Env string
	// Calendar is the environment's windows (nil: always open).
	Calendar *policy.Calendar
	// Now is the API server's clock.
	Now   func() time.Time
	Store Store
	// Gate is told of each deferral when it is an approval.Deferrer.
	Gate approval.Gate
	Log  logr.Logger
	// GateFailed (may be nil) hears that the gate refused to hear of a deferral.
	GateFailed func()
}

// Guard is one environment's deploy windows as its worker asks them.
type Guard struct {
	c Config
	// wake wakes the worker when the windows open (OnOpen).
	wake func()

	mu    sync.Mutex
	timer *time.Timer
	at    time.Time
}

// New is the Guard of c.Env.
func New(c Config) *Guard { return &Guard{c: c} }

// OnOpen makes wake be called when windows judged closed open.
func (g *Guard) OnOpen(wake func()) { g.wake = wake }

// Judge says whether plans may be applied now. When not, the worker is
// woken when the windows open (once: a later judgement keeps the timer when
// it opens at the same time).
func (g *Guard) Judge() policy.Verdict {
	if g == nil || g.c.Calendar == nil {
		return policy.Verdict{Open: true}
	}
	v := g.c.Calendar.Judge(g.c.Now())
	if v.Open || v.Opens.IsZero() {
		return v
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil && g.at.Equal(v.Opens) {
		return v
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	// The wait is measured on this process's monotonic clock from the API server's now: a wake-up a
	// moment early finds them closed and arms the timer again for the rest.
	g.at = v.Opens
	g.timer = time.AfterFunc(v.Opens.Sub(g.c.Now()), func() {
		g.mu.Lock()
		g.timer = nil
		g.mu.Unlock()
		if g.wake != nil {
			g.wake()
		}
	})
	return v
}

// Stop stops the timer (the worker no longer works the environment).
func (g *Guard) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

// Defer keeps prop's plan from being applied while the windows are closed
// (v): the phase becomes Deferred (in st, the pass's state, too) and the
// gate hears it (deploy.deferred). The phase is written once; a pass that
// finds it deferred already writes nothing. An error is the state write's.
func (g *Guard) Defer(ctx context.Context, st *state.EnvState, prop approval.Proposal, v policy.Verdict) error {
	if st.Phase == status.PhaseDeferred {
		return nil
	}
	if err := g.c.Store.Update(ctx, g.c.Env, func(st *state.EnvState) { st.Phase = status.PhaseDeferred }); err != nil {
		return err
	}
	st.Phase = status.PhaseDeferred
	g.c.Log.Info("plan deferred", "environment", g.c.Env, "revision", gitsource.ShortRevision(prop.Revision), "planHash", prop.Plan.PlanHash,
		"why", v.Message())
	g.tell(ctx, prop, v)
	return nil
}

// DeferApproved keeps the pending plan p of prop, just approved, from being
// applied while the windows are closed (v): the phase becomes Deferred
// beside the pending plan and its approvals, and the answer to the approver
// is the plan with why it waits.
func (g *Guard) DeferApproved(ctx context.Context, prop approval.Proposal, p *approval.Pending, v policy.Verdict) (*approval.Pending, error) {
	err := g.c.Store.Update(ctx, g.c.Env, func(st *state.EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == p.PlanHash {
			st.Phase = status.PhaseDeferred
		}
	})
	if err != nil {
		return nil, fmt.Errorf("deferring the approved plan %s: %w", p.PlanHash, err)
	}
	g.c.Log.Info("approved plan deferred", "environment", g.c.Env, "planHash", p.PlanHash, "why", v.Message())
	g.tell(ctx, prop, v)
	cp := *p
	cp.Reasons = append(slices.Clip(cp.Reasons), v.Message())
	return &cp, nil
}

// tell tells the gates that hear it (approval.Deferrer: the notifications)
// that prop waits for the deploy window; an error is counted and logged,
// and the plan waits all the same.
func (g *Guard) tell(ctx context.Context, prop approval.Proposal, v policy.Verdict) {
	d, ok := g.c.Gate.(approval.Deferrer)
	if !ok {
		return
	}
	if err := d.Deferred(ctx, prop, v.Message()); err != nil {
		if g.c.GateFailed != nil {
			g.c.GateFailed()
		}
		g.c.Log.Error(err, "telling the gate the plan is deferred", "environment", g.c.Env, "planHash", prop.Plan.PlanHash)
	}
}
