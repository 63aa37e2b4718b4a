package pass

import (
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/meter"
)

// Room is what every room of a pass (internal/gate, internal/deploy,
// internal/release, internal/decision) is given by the worker, each
// room's Config embedding it beside what that room alone uses.
type Room struct {
	Env string
	Log logr.Logger
	// Now is the API server's clock (internal/clock.Remote), shared by the
	// replicas.
	Now     func() time.Time
	Metrics *meter.Metrics
	// Store is the worker's store in its current term (each term fences it
	// anew: the worker's field, read at each call).
	Store *Store
}
