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
	ats  []time.Time
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		if l.on {
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
			l.ats = append(l.ats, time.Now())
		}
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on, l.reqs, l.ats = true, nil, nil
}

// seen reports whether req was recorded since start.
func (l *requestLog) seen(req string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.reqs {
		if r == req {
			return true
		}
	}
	return false
}

// until returns the requests recorded before the first one for which stop
// is true, and when that one was sent (zero: there was none).
func (l *requestLog) until(stop func(string) bool) ([]string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.reqs {
		if stop(r) {
			return append([]string(nil), l.reqs[:i]...), l.ats[i]
		}
	}
	return append([]string(nil), l.reqs...), time.Time{}
}

// TestPushToPatchStateReads: from a push webhook to the first patch of a
// skipConfirmation environment, the daemon reads its state once, at the
// start of the pass: the pin the manifest is resolved with comes from the
// state the pass read, and its two writes (the status, and the in-flight
// record with the run in one write) start from the state as the Store last
// read or wrote it, not from another GET in front of the patch.
//
// Beside the pass, the leader looks at the state once a second (a decision
// handed over, a new break-glass: decider.pickUp), with the same GET. The
// push follows one such look, so none falls before the patch on a quiet
// machine; under load, a look for each second the patch took is allowed.
func TestPushToPatchStateReads(t *testing.T) {
	h := newHarness(t, "devel")
	h.cfg.Source.Interval.Duration = time.Hour
	log := &requestLog{}
	r := h.startWith([]wire.Option{wire.WithWrapTransport(log.wrap)})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "first apply recorded", func() bool { return len(r.storeHistory(t, "devel")) == 1 })

	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	stateGet := "GET /api/v1/namespaces/" + h.stateNS + "/configmaps/" + state.ConfigMapName("devel")
	log.start()
	testenv.WaitFor(t, 30*time.Second, "the leader's look at the state", func() bool { return log.seen(stateGet) })
	log.start()
	looked := time.Now()
	r.push(t, h, "hot-path")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	patch := "PATCH /apis/apps/v1/namespaces/" + h.ns["devel"] + "/deployments/web"
	before, patched := log.until(func(r string) bool { return r == patch })
	if patched.IsZero() {
		t.Fatalf("no %s among the daemon's requests: %q", patch, before)
	}
	reads := 0
	for _, r := range before {
		if r == stateGet {
			reads++
		}
	}
	// The looks that may fall between: one a second since the one seen
	// (with a margin for the moment it took to be seen).
	looks := int((patched.Sub(looked) + 250*time.Millisecond) / time.Second)
	if reads < 1 || reads > 1+looks {
		t.Errorf("%d reads of the state before the first patch %v after a look, want 1 (the pass's) and at most %d looks; requests:\n%s",
			reads, patched.Sub(looked), looks, strings.Join(before, "\n"))
	}
}
