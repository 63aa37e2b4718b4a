package daemon

import (
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// pendingSince is the metric of when the plan waiting for a person was proposed.
const pendingSince = "stagehand_pending_approval_timestamp_seconds"

// webhookToPatch returns how many observations env's
// stagehand_webhook_to_patch_seconds holds, and their sum.
func webhookToPatch(t testing.TB, d *Daemon, env string) (uint64, float64) {
	t.Helper()
	return histogramOf(t, d.metrics, "stagehand_webhook_to_patch_seconds", "environment="+env)
}

// waitWebhookToPatch waits until d has timed a push to env's patch.
func waitWebhookToPatch(t testing.TB, d *Daemon, env string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, env+"'s push timed to its patch", func() bool {
		n, _ := webhookToPatch(t, d, env)
		return n > 0
	})
}

// TestWebhookToPatchObserved: a push webhook is timed to devel's first patch
// of the revision it brought (skipConfirmation), once; prod, whose plan
// waits for approval, is not timed, neither when proposed nor once approved
// and applied. The pending plan's proposal time is its gauge until then.
func TestWebhookToPatchObserved(t *testing.T) {
	h := newHarness(t, "devel", "prod")
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if n, _ := webhookToPatch(t, r.d, "devel"); n != 0 {
		t.Fatalf("before any push: %d observations", n)
	}
	if got, want := metricValue(t, r.d.metrics, pendingSince, "environment=prod"), float64(p.ProposedAt.UnixNano())/1e9; got != want {
		t.Errorf("prod's stagehand_pending_approval_timestamp_seconds = %v, want its proposal %v", got, want)
	}

	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	start := time.Now()
	r.push(t, h, "bump-devel")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	// The patch is timed once its answer is back, a moment after the image
	// can be seen: wait for the observation, then bound it.
	waitWebhookToPatch(t, r.d, "devel")
	took := time.Since(start)
	n, sum := webhookToPatch(t, r.d, "devel")
	if n != 1 || sum <= 0 || sum > took.Seconds() {
		t.Errorf("devel: %d observations summing %vs, want 1 within the %v from the push to the patch seen", n, sum, took)
	}

	rev := h.commit("prod", false, map[string]string{"web": "2.0.0"})
	r.push(t, h, "bump-prod")
	p = r.waitPending(t, "prod", rev)
	if code, b := r.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: p.PlanHash}); code != http.StatusAccepted {
		t.Fatalf("approve = %d %s", code, b)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:2.0.0")
	testenv.WaitFor(t, 30*time.Second, "prod's pending approval gauge gone", func() bool {
		return seriesCount(t, r.d.metrics, pendingSince) == 0
	})
	if n, _ := webhookToPatch(t, r.d, "prod"); n != 0 {
		t.Errorf("prod, patched after an approval: %d observations, want none", n)
	}
	if n, _ := webhookToPatch(t, r.d, "devel"); n != 1 {
		t.Errorf("devel, which the prod bump did not change: %d observations, want still 1", n)
	}
}
