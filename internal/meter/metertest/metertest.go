// Package metertest reads a meter.Metrics registry as a scrape would, for
// the tests of the daemon and the rooms that count through it.
package metertest

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/stagehand-gitops/stagehand/internal/meter"
)

// Series returns the series of the metric name in m's registry that carry
// every label of labels ("environment=devel").
func Series(t testing.TB, m *meter.Metrics, name string, labels ...string) []*dto.Metric {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				if have[k] != v {
					continue series
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// Value is the sum of the counter or gauge name's series with labels (0
// when there is none).
func Value(t testing.TB, m *meter.Metrics, name string, labels ...string) float64 {
	t.Helper()
	v := 0.0
	for _, s := range Series(t, m, name, labels...) {
		v += s.GetCounter().GetValue() + s.GetGauge().GetValue()
	}
	return v
}

// Count is how many series the metric name has.
func Count(t testing.TB, m *meter.Metrics, name string) int {
	t.Helper()
	return len(Series(t, m, name))
}

// Histogram is how many observations the histogram name's series with
// labels hold, and their sum.
func Histogram(t testing.TB, m *meter.Metrics, name string, labels ...string) (count uint64, sum float64) {
	t.Helper()
	for _, s := range Series(t, m, name, labels...) {
		count += s.GetHistogram().GetSampleCount()
		sum += s.GetHistogram().GetSampleSum()
	}
	return count, sum
}
