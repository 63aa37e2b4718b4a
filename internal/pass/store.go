package pass

import (
	"context"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// Store is a worker's state store: each state it reads or writes is seen
// by seen. The worker sets stagehand_pending_approvals there, from the
// state's phase, and nowhere else: the gauge is what the holder last read
// or wrote, whichever step moved the phase.
type Store struct {
	*state.Store
	seen func(*state.EnvState)
}

// Observed is st for env's worker, setting m's pending gauge from each
// state seen.
func Observed(st *state.Store, m *meter.Metrics, env string) Store {
	return Store{Store: st, seen: func(es *state.EnvState) {
		m.SetPending(env, awaitsPerson(es))
		var since time.Time
		if awaitsPerson(es) && es.Pending != nil {
			since = es.Pending.ProposedAt
		}
		m.SetPendingSince(env, since)
	}}
}

// Load is state.Store's Load, the state read seen.
func (s Store) Load(ctx context.Context, env string) (*state.EnvState, error) {
	st, err := s.Store.Load(ctx, env)
	if err == nil && st != nil {
		s.seen(st)
	}
	return st, err
}

// Update is state.Store's Update, the state written seen.
func (s Store) Update(ctx context.Context, env string, mutate func(*state.EnvState)) error {
	var last *state.EnvState
	err := s.Store.Update(ctx, env, func(st *state.EnvState) {
		mutate(st)
		last = st
	})
	if err == nil && last != nil {
		s.seen(last)
	}
	return err
}

// awaitsPerson says whether st waits for a person's approval: a plan's, or
// a release's.
func awaitsPerson(st *state.EnvState) bool {
	return st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseAwaitingRelease
}
