package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// An incident rollback (`reconciler rollback --now`) pins the versions it
// rolled back to in the environment's state (EnvState.Pin). Every resolve of
// the environment then puts the pinned versions in place of git's, so the
// plan, the apply, the status and the history all see the pinned versions,
// and a resync never goes back to the newer ones while the rollback pull
// request is open. The pin goes by itself once git says what it says (the
// pull request merged), and when it expires; Pin(ctx, env, nil) removes it
// (a released hold; the merge webhook leaves it, as the source may not have
// the merge yet).

// Pin stores p as env's pin (nil removes it) and, on the leader, wakes the
// environment's worker to plan with it at once; other replicas' leader
// plans with it at its next resync. The error wraps
// approval.ErrUnknownEnvironment for an environment not in the configuration.
func (ds *dispatcher) Pin(ctx context.Context, env string, p *approval.Pin) error {
	w, ok := ds.workers[env]
	if !ok {
		return fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, ds.envNames)
	}
	if err := ds.store.Update(ctx, env, func(st *state.EnvState) { st.Pin = p }); err != nil {
		return fmt.Errorf("storing the pin of %s: %w", env, err)
	}
	if ds.leading.Load() {
		w.WakeUp()
	}
	return nil
}

// pinned returns envM with the pin of the environment's state st applied, removing a pin
// that expired or that git has caught up with. st is the state the caller
// read a moment ago (a pass reads it first: reading it again would delay
// every pass's first patch by a round trip), or nil to read it.
func (m envManifests) pinned(ctx context.Context, envM *manifest.Environment, st *state.EnvState) (*manifest.Environment, error) {
	d, env := m.d, m.env
	if st == nil {
		var err error
		if st, err = d.store.Load(ctx, env); err != nil {
			return nil, fmt.Errorf("reading the pin of %s: %w", env, err)
		}
	}
	p := st.Pin
	if p == nil {
		return envM, nil
	}
	out, caughtUp := p.Apply(envM)
	if !caughtUp && d.clock.Now().Before(p.ExpiresAt) { // ExpiresAt is the hold's: the API server's clock
		return out, nil
	}
	// Done (git says it) or expired: git decides again.
	err := d.store.Update(ctx, env, func(st *state.EnvState) {
		if st.Pin != nil && st.Pin.PR == p.PR && st.Pin.At.Equal(p.At) {
			st.Pin = nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("removing the pin of %s: %w", env, err)
	}
	d.log.Info("pin removed", "environment", env, "rollback", p.PR, "caughtUp", caughtUp)
	return envM, nil
}

// Notes says, beside a plan awaiting approval, that the environment
// is held by a rollback (the bots hold off; merged changes still deploy) and
// that an incident rollback pins versions. A hold that cannot be read is
// left out: the plan is shown without the note.
func (m envManifests) Notes(ctx context.Context, st *state.EnvState) []string {
	d, lockPath := m.d, m.lockPath
	var notes []string
	if d.lockSvc != nil && lockPath != "" {
		h, err := d.lockSvc.Get(ctx, lock.HoldPath(lockPath))
		if err == nil && h.Type == lock.Hold && !h.Expired(d.lockSvc.Now()) {
			notes = append(notes, "**Held by a rollback:** "+h.BlockingMessage(time.UTC)+" `prbot bump` and `prbot promote` hold off; what is merged still deploys.")
		}
	}
	if st != nil && st.Pin != nil {
		notes = append(notes, fmt.Sprintf("**Pinned by rollback #%d** (%s): its services keep the versions of `%s` until it merges.",
			st.Pin.PR, st.Pin.URL, approval.ShortRevision(st.Pin.Revision)))
	}
	return notes
}
