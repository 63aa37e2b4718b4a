package daemon

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestAutoApprovedPlanReadsNoHold: the notes a proposal shows (a rollback's
// hold, read from the lock storage) are read only for a plan that awaits
// approval, where the gate shows them. A skipConfirmation plan goes to its
// first patch without that read: with no hold it is a Get and a consistent
// List of the locks, ~100 ms of BenchmarkWebhookToPatch's path.
func TestAutoApprovedPlanReadsNoHold(t *testing.T) {
	h := newHarness(t, "devel", "prod")
	var mu sync.Mutex
	reads := map[string]int{} // environment: Gets of its hold
	holds := map[string]string{}
	for env, ec := range h.cfg.Environments {
		holds["/"+lock.ObjectName(lock.HoldPath(ec.LockPath))] = env
	}
	cfg := rest.CopyConfig(cluster.Env(t).Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			for suffix, env := range holds {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, suffix) {
					mu.Lock()
					reads[env]++
					mu.Unlock()
				}
			}
			return rt.RoundTrip(r)
		})
	})
	r := h.startWith([]wire.Option{wire.WithRESTConfig(cfg)})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "devel's first apply recorded", func() bool {
		hist, err := r.d.History(context.Background(), "devel")
		return err == nil && len(hist) == 1
	})
	r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	mu.Lock()
	defer mu.Unlock()
	if reads["devel"] != 0 || reads["prod"] == 0 {
		t.Errorf("hold reads: devel %d, prod %d; want none for devel (auto-approved), some for prod (awaiting approval)",
			reads["devel"], reads["prod"])
	}
}
