package daemon

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// BenchmarkWebhookToPatch measures a commit pushed to the git server, the push
// webhook, and the patched Deployment observed through the API server
// (target p50 < 1s on loopback). The source polls hourly, so only the webhook
// can wake it.
func BenchmarkWebhookToPatch(b *testing.B) {
	benchmarkLatency(b, time.Hour, true)
}

// BenchmarkPollOnly measures the same without a webhook, with a 1s poll
// interval (target: within interval + 1s).
func BenchmarkPollOnly(b *testing.B) {
	benchmarkLatency(b, time.Second, false)
}

func benchmarkLatency(b *testing.B, interval time.Duration, webhook bool) {
	h := newHarness(b, "devel")
	h.cfg.Source.Interval = config.Duration{Duration: interval}
	r := h.start()
	waitImage(b, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	applied := 1
	waitFor(b, 30*time.Second, "first apply recorded", func() bool { return len(r.history(b, "devel")) == applied })
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf("%sweb:2.0.%d", imageRepo, i)
		start := time.Now()
		h.commit("devel", true, map[string]string{"web": fmt.Sprintf("2.0.%d", i)})
		if webhook {
			r.push(b, h, fmt.Sprintf("bench-%d", i))
		}
		deadline := start.Add(30 * time.Second)
		for image(b, h.ns["devel"], "web") != want {
			if time.Now().After(deadline) {
				b.Fatalf("iteration %d: %s not patched within 30s", i, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		// Let the apply finish (rollout, history) before the next commit.
		b.StopTimer()
		applied++
		waitFor(b, 30*time.Second, "apply recorded", func() bool { return len(r.history(b, "devel")) >= applied })
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Milliseconds()) }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.9), "p90-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
}
