package daemon

import (
	"time"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// views answers what the API and the web page read of the environments
// (api.Backend's readers): an environment's status view, its history and
// entries, and the webhook deliveries recorded (approval.Deliveries). Every
// answer is read from the state store, so every replica answers the same;
// the Daemon embeds it.
type views struct {
	cfg      *config.Config
	envNames []string
	store    *state.Store
	// clock is the state cluster's API server's clock, which the windows
	// are judged on.
	clock     *clock.Remote
	calendars map[string]*policy.Calendar
	targets   map[string][]reconcile.Target
	lockSvc   *lock.Service
	// shard names each environment's holder (nil with one leader).
	shard *lease.Shard
	// deliveries records the webhook deliveries that reached an approval
	// path (deliveries.go).
	deliveries *state.Deliveries
}

// Now is the time on the state cluster's API server's clock, which every
// time the daemon records is on (the local clock until its first response).
func (vw *views) Now() time.Time { return vw.clock.Now() }
