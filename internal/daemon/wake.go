package daemon

import (
	"context"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/wake"
)

// A push webhook may reach any replica, but only the leader polls the
// source. A replica that does not lead records the push as a wake-up: it
// sets one annotation on the ConfigMap WakeConfigMapName in the state
// namespace; the leader watches that ConfigMap and polls at once on every
// change (internal/wake's Bell).
const (
	// WakeConfigMapName is the ConfigMap a standby annotates to wake the
	// leader (it holds no data).
	WakeConfigMapName = wake.ConfigMapName

	wakeWriteTimeout = 5 * time.Second
)

// pushed is the push webhook's trigger: the leader polls now; any other
// replica wakes the leader. With leaderElection.perEnvironment the replica
// polls and wakes all others (each holds some environments).
func (d *Daemon) pushed() {
	d.metrics.Pushed()
	if d.shard != nil {
		// Every replica polls, and each works only what it holds: poll
		// here, and wake the holders of the others.
		d.source.Trigger()
	} else if d.leading.Load() {
		d.source.Trigger()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wakeWriteTimeout)
	defer cancel()
	if err := d.bell.Ring(ctx); err != nil {
		d.log.Error(err, "push not handed to the leader: it will be seen at the next poll")
		return
	}
	d.log.V(1).Info("push handed to the leader")
}
