package daemon

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/meter/metertest"
)

// The daemon's metrics are read as a scrape reads them (internal/meter/metertest).

func seriesOf(t testing.TB, m *meter.Metrics, name string, labels ...string) []*dto.Metric {
	t.Helper()
	return metertest.Series(t, m, name, labels...)
}

func metricValue(t testing.TB, m *meter.Metrics, name string, labels ...string) float64 {
	t.Helper()
	return metertest.Value(t, m, name, labels...)
}

func seriesCount(t testing.TB, m *meter.Metrics, name string) int {
	t.Helper()
	return metertest.Count(t, m, name)
}

func histogramOf(t testing.TB, m *meter.Metrics, name string, labels ...string) (uint64, float64) {
	t.Helper()
	return metertest.Histogram(t, m, name, labels...)
}
