package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// outage is how long the git server stays down before it flaps: the
// issue's 30 s under `make faults` (STAGEHAND_FAULTS=long), 5 s in the short
// form.
func outage() time.Duration {
	if os.Getenv("STAGEHAND_FAULTS") == "long" {
		return 30 * time.Second
	}
	return 5 * time.Second
}

// waiting returns devel's status `waiting` as r serves it.
func (f *fixture) waiting(ctx context.Context, r *replica) ([]string, bool) {
	var e struct {
		Waiting []string `json:"waiting"`
	}
	if r.get(ctx, f.token, "/api/v1/environments/devel", &e) != http.StatusOK {
		return nil, false
	}
	return e.Waiting, true
}

// metric returns the sum of the samples of name on r's /metrics.
func (r *replica) metric(ctx context.Context, name string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum := 0.0
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		sum += v
	}
	return sum
}

// applied waits until every one of n workloads runs version and the newest
// history entry is rev's, succeeded.
func (f *fixture) applied(t *testing.T, r *replica, n int, version, rev string, timeout time.Duration) {
	t.Helper()
	ctx := t.Context()
	testenv.WaitFor(t, timeout, "revision "+rev[:8]+" applied: every workload on "+version, func() bool {
		imgs, err := f.images(ctx)
		if err != nil {
			return false
		}
		for i := range n {
			if imgs[svc(i)] != image(i, version) {
				return false
			}
		}
		h, ok := f.history(ctx, r)
		return ok && len(h) > 0 && h[0].Revision == rev && h[0].Result == "succeeded"
	})
}

// TestGitDownThenFlapping: the git server is down (the short form: 5 s,
// `make faults`: 30 s), then flaps up and down. The reconciler keeps the
// last good revision deployed, says "source unreachable since …" in the
// status and counts the errors, and deploys the next revision once the
// server answers again, without a restart. A real Prometheus scraping it
// and evaluating the chart's alerts (the threshold lowered to 2 s) fires
// StagehandSourceUnreachable during the outage, and not before, and it
// resolves once the source answers again.
func TestGitDownThenFlapping(t *testing.T) {
	const n = 3
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	pid := a.cmd.Process.Pid
	prom := alerting(t, map[string]any{"sourceUnreachableSeconds": 2}, a)
	good := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "to 2.0.0")
	f.applied(t, a, n, "2.0.0", good, 2*time.Minute)
	prom.WaitFor(t, "stagehand_source_failing_seconds == 0")
	if got, err := firing(ctx, prom, "StagehandSourceUnreachable"); err != nil || len(got) > 0 {
		t.Errorf("StagehandSourceUnreachable before the outage: %v, %v; want none", got, err)
	}

	f.git.Stop(t)
	down := time.Now()
	testenv.WaitFor(t, 30*time.Second, `the status saying "source unreachable since …"`, func() bool {
		w, ok := f.waiting(ctx, a)
		return ok && len(w) > 0 && strings.HasPrefix(w[0], "source unreachable since ")
	})
	if got := a.metric(ctx, "stagehand_source_errors_total"); got < 1 {
		t.Errorf("stagehand_source_errors_total = %v while the git server is down, want ≥ 1", got)
	}
	alert := waitFiring(t, prom, "StagehandSourceUnreachable", 30*time.Second)
	fired := time.Since(down)
	if alert.Labels["severity"] != "critical" || alert.Annotations["summary"] == "" {
		t.Errorf("StagehandSourceUnreachable: labels %v, annotations %v; want severity critical and a summary", alert.Labels, alert.Annotations)
	}
	time.Sleep(time.Until(down.Add(outage())))
	// Flapping: up a second, down a second, while a new revision arrives.
	next := f.git.Repo("manifests").Commit(t, "main", manifest(n, "3.0.0"), "to 3.0.0")
	back := time.Now() // the outage ends: the server answers now and then
	for range 3 {
		imgs, err := f.images(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got := imgs[svc(i)]; got != image(i, "2.0.0") && got != image(i, "3.0.0") {
				t.Errorf("%s runs %s during the outage, want the last good 2.0.0 (or the next, 3.0.0)", svc(i), got)
			}
		}
		f.git.Start(t)
		time.Sleep(time.Second)
		f.git.Stop(t)
		time.Sleep(time.Second)
	}
	f.git.Start(t)
	f.applied(t, a, n, "3.0.0", next, 3*time.Minute)
	recovered := time.Since(back)
	testenv.WaitFor(t, 30*time.Second, "the status no longer waiting on the source", func() bool {
		w, ok := f.waiting(ctx, a)
		return ok && len(w) == 0
	})
	if !a.alive() || a.cmd.Process.Pid != pid {
		t.Errorf("the reconciler was restarted (pid %d, was %d)", a.cmd.Process.Pid, pid)
	}
	waitResolved(t, prom, "StagehandSourceUnreachable", 30*time.Second)
	h, _ := f.history(ctx, a)
	for _, e := range h {
		if e.Result != "succeeded" {
			t.Errorf("history entry %d of %s: %s %s, want only succeeded entries", e.ID, e.Revision[:8], e.Result, e.Message)
		}
	}
	table.add(t, row{fault: "3 git server down " + outage().String() + ", then flapping", survived: true, recover: recovered,
		note: fmt.Sprintf("recovered without a restart; seconds from the outage's end (flapping) to the next revision applied; StagehandSourceUnreachable (threshold 2 s) fired %.1f s into the outage and resolved", fired.Seconds())})
}
