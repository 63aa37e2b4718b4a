package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Observations is how many observations the histogram name of g holds,
// summed over its series whose label has value: the reconciler's passes of
// one environment (stagehand_reconcile_duration_seconds, environment), say.
// A test that proves something does not happen waits for such a count to
// grow, not for a sleep to end.
func Observations(tb testing.TB, g prometheus.Gatherer, name, label, value string) uint64 {
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
