package daemon

import (
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// dispatcher takes the decisions every approval path makes (the API, the
// web page, the check run's buttons, the CLI: approval.Decider and
// approval.BreakGlasser) and the pins of incident rollbacks to the
// environment's worker when this replica works it, or through the state to
// the replica that does (handover.go); the Daemon embeds it.
type dispatcher struct {
	envNames []string
	workers  map[string]*worker
	store    *state.Store
	clock    *clock.Remote
	log      logr.Logger
	// leads reports whether this replica works env now; leading whether it
	// leads with one leader Lease.
	leads   func(env string) bool
	leading *atomic.Bool
	// busyWait is how long a decision waits for its busy worker (a long
	// rollout) before it is handed over through the state (30s).
	busyWait time.Duration
}
