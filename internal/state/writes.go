package state

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a write in stagehand_state_writes_total.
const (
	WriteWritten = "written" // the state ConfigMap (and its parts) written
	WriteFailed  = "failed"  // refused or failed after the retries on conflicts
)

// writeCounter counts a Store's writes, shared by its Fenced copies.
type writeCounter struct{ vec *prometheus.CounterVec }

// newWrites is the counter of a Store's writes.
func newWrites() writeCounter {
	return writeCounter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stagehand_state_writes_total",
		Help: "Writes of an environment's state ConfigMap (an update of its records, or the claim of a term), by result: written, or failed (refused, or failing after the retries on conflicts; a write abandoned because the process stops is not counted).",
	}, []string{"environment", "result"})}
}

// Collectors returns the metrics of the Store's writes, for the process's
// registry (internal/cli registers them beside the daemon's).
func (s *Store) Collectors() []prometheus.Collector { return []prometheus.Collector{s.writes.vec} }

// count counts one write of env's state by its error.
func (c writeCounter) count(env string, err error) {
	switch {
	case err == nil:
		c.vec.WithLabelValues(env, WriteWritten).Inc()
	case errors.Is(err, context.Canceled):
		// The process (or the term's work) stops: not a failing store.
	default:
		c.vec.WithLabelValues(env, WriteFailed).Inc()
	}
}
