package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series are the series of the histogram Name whose label Label has Value:
// the reconciler's passes of one environment
// (stagehand_reconcile_duration_seconds, environment, prod), say.
type Series struct {
	Name, Label, Value string
}

// Observations is how many observations g holds in the series s, summed.
// A test that proves something does not happen waits for such a count to
// grow, not for a sleep to end.
func Observations(tb testing.TB, g prometheus.Gatherer, s Series) uint64 {
	name, label, value := s.Name, s.Label, s.Value
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}
