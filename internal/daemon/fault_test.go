package daemon

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
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
	if err != nil || since.Before(down) || since.After(time.Now()) {
		t.Errorf("waiting %q: since %v (%v), want a time after the git server stopped at %v", waiting[0], since, err, down)
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

// TestWaiting: the faults a status names, each with when it began or ends;
// a rate limit that has ended is not named.
func TestWaiting(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	down := gitsource.Status{Failures: 3, FailingSince: now.Add(-time.Minute), LastError: "dial tcp: connection refused"}
	limited := &approval.RateLimitedError{Service: "GitHub", Until: now.Add(time.Hour), Err: errors.New("403")}
	unreachable := &reconcile.Plan{Problems: []reconcile.Problem{
		{Service: "web", Target: "eu", Message: "target eu unreachable since 07:59:00: timeout", Unreachable: true},
		{Service: "api", Target: "eu", Message: "target eu unreachable since 07:59:00: timeout", Unreachable: true},
		{Service: "web", Target: "us", Message: "forbidden"},
	}}
	for _, tc := range []struct {
		name    string
		source  gitsource.Status
		limited *approval.RateLimitedError
		plan    *reconcile.Plan
		want    []string
	}{
		{name: "nothing", plan: &reconcile.Plan{}},
		{name: "source down", source: down,
			want: []string{"source unreachable since 2026-11-24T07:59:00Z: dial tcp: connection refused"}},
		{name: "rate limited", limited: limited, want: []string{"GitHub rate limited until 2026-11-24T09:00:00Z"}},
		{name: "rate limit over", limited: &approval.RateLimitedError{Service: "GitHub", Until: now.Add(-time.Second)}},
		{name: "all", source: down, limited: limited, plan: unreachable, want: []string{
			"GitHub rate limited until 2026-11-24T09:00:00Z",
			"source unreachable since 2026-11-24T07:59:00Z: dial tcp: connection refused",
			"API server of target eu unreachable: target eu unreachable since 07:59:00: timeout",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &worker{workerDeps: workerDeps{now: func() time.Time { return now },
				sourceStatus: func() gitsource.Status { return tc.source }}, rateLimited: tc.limited}
			if diff := cmp.Diff(tc.want, w.waiting(tc.plan)); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}
