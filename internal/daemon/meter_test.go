package daemon

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/stagehand-gitops/stagehand/internal/meter"
)

// seriesOf returns the series of the metric name in m's registry that carry
// every label of labels ("environment=devel"): the daemon's metrics are read
// as a scrape reads them.
func seriesOf(t testing.TB, m *meter.Metrics, name string, labels ...string) []*dto.Metric {
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

// metricValue is the value of the counter or gauge name's series with
// labels (0 when there is none).
func metricValue(t testing.TB, m *meter.Metrics, name string, labels ...string) float64 {
	t.Helper()
	v := 0.0
	for _, s := range seriesOf(t, m, name, labels...) {
		v += s.GetCounter().GetValue() + s.GetGauge().GetValue()
	}
	return v
}

// seriesCount is how many series the metric name has.
func seriesCount(t testing.TB, m *meter.Metrics, name string) int {
	t.Helper()
	return len(seriesOf(t, m, name))
}

// histogramOf is how many observations the histogram name's series with
// labels hold, and their sum.
func histogramOf(t testing.TB, m *meter.Metrics, name string, labels ...string) (uint64, float64) {
	t.Helper()
	var n uint64
	var sum float64
	for _, s := range seriesOf(t, m, name, labels...) {
		n += s.GetHistogram().GetSampleCount()
		sum += s.GetHistogram().GetSampleSum()
	}
	return n, sum
}
