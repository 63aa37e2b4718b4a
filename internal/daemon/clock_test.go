package daemon

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// TestTimesOnTheAPIServersClock: a replica whose own clock is two hours
// ahead or behind records its history, its pending plans and the expiry of
// a lock taken with a duration through its API on the API server's clock
// (the test's), and reports the offset it measured.
func TestTimesOnTheAPIServersClock(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Hour, -2 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			h := newHarness(t)
			before := time.Now().Add(-2 * time.Second)
			r := h.startWith([]wire.Option{wire.WithLocalClock(func() time.Time { return time.Now().Add(skew) })})
			waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
			var hist = r.history(t, "devel")
			testenv.WaitFor(t, 30*time.Second, "devel's history entry", func() bool {
				hist = r.history(t, "devel")
				return len(hist) > 0
			})
			p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
			after := time.Now().Add(2 * time.Second)
			within := func(what string, at time.Time) {
				t.Helper()
				if at.Before(before) || at.After(after) {
					t.Errorf("%s = %s, want between %s and %s (the API server's clock, not the replica's %s off)", what, at, before, after, skew)
				}
			}
			e := hist[0]
			within("history started", e.Started)
			within("history finished", e.Finished)
			if e.Finished.Before(e.Started) {
				t.Errorf("history entry finished %s before it started %s", e.Finished, e.Started)
			}
			within("prod pending proposedAt", p.ProposedAt)

			code, b := r.call(t, "POST", "/api/v1/locks", testToken, map[string]any{
				"path": "apps/prod", "type": "deploy", "author": "ops", "duration": "10m"})
			if code != http.StatusCreated {
				t.Fatalf("POST /api/v1/locks = %d %s", code, b)
			}
			var lr struct {
				Lock struct {
					ExpiresAt int64 `json:"expires_at"`
				} `json:"lock"`
			}
			if err := json.Unmarshal(b, &lr); err != nil {
				t.Fatal(err)
			}
			exp := time.Unix(lr.Lock.ExpiresAt, 0)
			if want := time.Now().Add(10 * time.Minute); exp.Before(want.Add(-5*time.Second)) || exp.After(want.Add(5*time.Second)) {
				t.Errorf("a 10m lock taken now expires at %s, want about %s", exp, want)
			}
			off, ok := r.d.clock.Offset()
			if d := off + skew; !ok || d < -2*time.Second || d > 2*time.Second {
				t.Errorf("measured offset of the API server's clock = %s (%v), want about %s", off, ok, -skew)
			}
		})
	}
}

// TestEnvironmentLeaseTimesOnTheAPIServersClock: with
// leaderElection.perEnvironment, a replica two hours ahead stamps its
// environment Leases' acquire and renew times on the API server's clock
// (liveness is judged on each replica's monotonic clock; these are for
// people and tools reading the Leases).
func TestEnvironmentLeaseTimesOnTheAPIServersClock(t *testing.T) {
	h := newHarness(t)
	h.cfg.LeaderElection.PerEnvironment = true
	before := time.Now().Add(-2 * time.Second)
	h.startWith([]wire.Option{wire.WithLocalClock(func() time.Time { return time.Now().Add(2 * time.Hour) })})
	leases := cluster.Env(t).Clientset.CoordinationV1().Leases(h.stateNS)
	testenv.WaitFor(t, 30*time.Second, "devel's Lease renewed", func() bool {
		l, err := leases.Get(t.Context(), lease.EnvName("devel"), metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || l.Spec.AcquireTime == nil || !l.Spec.RenewTime.After(l.Spec.AcquireTime.Time) {
			return false
		}
		after := time.Now().Add(2 * time.Second)
		for what, at := range map[string]time.Time{"acquireTime": l.Spec.AcquireTime.Time, "renewTime": l.Spec.RenewTime.Time} {
			if at.Before(before) || at.After(after) {
				t.Fatalf("devel's Lease %s = %s, want between %s and %s (the API server's clock)", what, at, before, after)
			}
		}
		return true
	})
}
