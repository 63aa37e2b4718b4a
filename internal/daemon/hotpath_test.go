package daemon

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// requestLog records the daemon's requests to the API server, in order.
type requestLog struct {
	mu   sync.Mutex
	on   bool
	reqs []string // "METHOD path"
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		if l.on {
			req := r.Method + " " + r.URL.Path
			if r.URL.Query().Get("resourceVersion") == "0" {
				req += " (watch cache)" // the leader's look every second (state.Glance), no read of etcd
			}
			l.reqs = append(l.reqs, req)
		}
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on, l.reqs = true, nil
}

// until returns the requests recorded before the first one for which stop
// is true, and whether there was one.
func (l *requestLog) until(stop func(string) bool) ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.reqs {
		if stop(r) {
			return append([]string(nil), l.reqs[:i]...), true
		}
	}
	return append([]string(nil), l.reqs...), false
}

// TestPushToPatchStateReads: from a push webhook to the first patch of a
// skipConfirmation environment, the daemon reads its state once, at the
// start of the pass: the pin the manifest is resolved with comes from the
// state the pass read, and its two writes (the status, and the in-flight
// record with the run in one write) start from the state as the Store last
// read or wrote it, not from another GET in front of the patch.
func TestPushToPatchStateReads(t *testing.T) {
	h := newHarness(t, "devel")
	h.cfg.Source.Interval.Duration = time.Hour
	log := &requestLog{}
	r := h.startWith([]wire.Option{wire.WithWrapTransport(log.wrap)})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "first apply recorded", func() bool { return len(r.storeHistory(t, "devel")) == 1 })

	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	log.start()
	r.push(t, h, "hot-path")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	patch := "PATCH /apis/apps/v1/namespaces/" + h.ns["devel"] + "/deployments/web"
	before, ok := log.until(func(r string) bool { return r == patch })
	if !ok {
		t.Fatalf("no %s among the daemon's requests: %q", patch, before)
	}
	stateGet := "GET /api/v1/namespaces/" + h.stateNS + "/configmaps/" + state.ConfigMapName("devel")
	reads := 0
	for _, r := range before {
		if r == stateGet {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of the state before the first patch, want 1 (the pass's); requests:\n%s",
			reads, strings.Join(before, "\n"))
	}
}
