package daemon

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// metricValue reads one sample of /metrics ("name" or "name{labels}").
func (r *running) metricValue(t testing.TB, sample string) float64 {
	t.Helper()
	code, body := r.call(t, "GET", "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no sample %s in /metrics", sample)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSourceDownIsReported: while the git server is down, the last good
// revision stays applied, the environment's status says the source is
// unreachable and since when, and the source's errors are counted; once it
// is back, a new revision is applied and the status no longer waits,
// without a restart.
func TestSourceDownIsReported(t *testing.T) {
	h := newHarness(t, "devel")
	h.cfg.Source.Interval = config.Duration{Duration: time.Second}
	r := h.startWith([]wire.Option{wire.WithSourceOptions(gitsource.WithBackoff(100*time.Millisecond, 400*time.Millisecond))}, WithResync(200*time.Millisecond))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	if got := r.metricValue(t, "stagehand_source_failing_seconds"); got != 0 {
		t.Errorf("stagehand_source_failing_seconds = %v while the source answers, want 0", got)
	}

	down := time.Now().UTC().Truncate(time.Second)
	h.git.Stop(t)
	var waiting []string
	testenv.WaitFor(t, 20*time.Second, "devel's status to name the source fault", func() bool {
		waiting = r.environment(t, "devel").Waiting
		return len(waiting) == 1 && strings.HasPrefix(waiting[0], "source unreachable since ")
	})
	since, err := time.Parse(time.RFC3339, strings.TrimSuffix(strings.Fields(waiting[0])[3], ":"))
	// since is on the API server's clock, which the daemon estimates from
	// whole-second Date headers: allow that estimate a second either way.
	if err != nil || since.Before(down.Add(-time.Second)) || since.After(time.Now().Add(time.Second)) {
		t.Errorf("waiting %q: since %v (%v), want a time after the git server stopped at %v (±1 s)", waiting[0], since, err, down)
	}
	if got := r.metricValue(t, "stagehand_source_errors_total"); got < 1 {
		t.Errorf("stagehand_source_errors_total = %v while the source is down, want at least 1", got)
	}
	if got := r.metricValue(t, "stagehand_source_failing_seconds"); got <= 0 {
		t.Errorf("stagehand_source_failing_seconds = %v while the source is down, want more than 0", got)
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
		t.Errorf("devel runs %s while the source is down, want the last good web:1.0.0", got)
	}

	h.git.Start(t)
	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	testenv.WaitFor(t, 20*time.Second, "devel's status to wait no more", func() bool { return len(r.environment(t, "devel").Waiting) == 0 })
}
