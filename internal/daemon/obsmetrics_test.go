package daemon

import (
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// pendingSince is the metric of when the plan waiting for a person was proposed.
const pendingSince = "stagehand_pending_approval_timestamp_seconds"

// TestPendingSinceFollowsThePhase: stagehand_pending_approval_timestamp_seconds
// is the pending plan's (or release's) proposal time exactly while the state
// waits for a person, and absent otherwise.
func TestPendingSinceFollowsThePhase(t *testing.T) {
	m := meter.New(nil)
	s := observed(nil, m, "prod")
	at := time.Date(2026, 11, 29, 3, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		phase   status.Phase
		pending *approval.Pending
		want    float64 // -1: no series
	}{
		{status.PhaseAwaitingApproval, &approval.Pending{ProposedAt: at}, float64(at.UnixNano()) / 1e9},
		{status.PhaseApplying, nil, -1},
		{status.PhaseAwaitingRelease, &approval.Pending{ProposedAt: at.Add(time.Hour), Release: true}, float64(at.Add(time.Hour).UnixNano()) / 1e9},
		{status.PhaseIdle, nil, -1},
		// A pending plan kept while a deploy window defers it is not a person's to decide.
		{status.PhaseIdle, &approval.Pending{ProposedAt: at}, -1},
	} {
		s.seen(&state.EnvState{Phase: tc.phase, Pending: tc.pending})
		got := -1.0
		if seriesCount(t, m, pendingSince) == 1 {
			got = metricValue(t, m, pendingSince, "environment=prod")
		}
		if got != tc.want {
			t.Errorf("phase %q: stagehand_pending_approval_timestamp_seconds = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

// TestPendingSinceDroppedWithTheLease: a replica that stops holding an
// environment (or stops leading) drops its pending approval's timestamp: the
// next holder shows it, and a plan approved there does not stay pending
// here.
func TestPendingSinceDroppedWithTheLease(t *testing.T) {
	m := meter.New(nil)
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for _, env := range []string{"devel", "prod"} {
		m.Leadership(env, true)
		observed(nil, m, env).seen(&state.EnvState{Phase: status.PhaseAwaitingApproval, Pending: &approval.Pending{ProposedAt: at}})
	}
	m.Leadership("prod", false)
	if got := seriesCount(t, m, pendingSince); got != 1 || metricValue(t, m, pendingSince, "environment=devel") == 0 {
		t.Errorf("after prod's Lease was lost: %d series, want devel's only", got)
	}
	m.SetLeader(false)
	if got := seriesCount(t, m, pendingSince); got != 0 {
		t.Errorf("after leading stopped: %d series, want none", got)
	}
}

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
