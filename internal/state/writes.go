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

// newWrites is the counter of a Store's writes, shared by its Fenced copies.
func newWrites() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stagehand_state_writes_total",
		Help: "Writes of an environment's state ConfigMap (an update of its records, or the claim of a term), by result: written, or failed (refused, or failing after the retries on conflicts; a write abandoned because the process stops is not counted).",
	}, []string{"environment", "result"})
}

// Collectors returns the metrics of the Store's writes, for the process's
// registry (internal/cli registers them beside the daemon's).
func (s *Store) Collectors() []prometheus.Collector { return []prometheus.Collector{s.writes} }

// counted counts one write of env's state by its error.
func (s *Store) counted(env string, err error) {
	switch {
	case err == nil:
		s.writes.WithLabelValues(env, WriteWritten).Inc()
	case errors.Is(err, context.Canceled):
		// The process (or the term's work) stops: not a failing store.
	default:
		s.writes.WithLabelValues(env, WriteFailed).Inc()
	}
}
