package ui

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// maxWatchers bounds the open event streams of one replica.
const maxWatchers = 256

// heartbeat is how often an idle stream gets a comment, so proxies keep it.
const heartbeat = 20 * time.Second

// hub reads the state while someone watches and tells every watcher which
// environment changed: one reader for all of them, none while nobody
// watches. Changes come from any replica (an approval made on another one,
// the leader's rollout), since every replica reads the same Store.
type hub struct {
	b    Backend
	poll time.Duration

	mu       sync.Mutex
	watchers map[chan string]struct{}
	stop     context.CancelFunc // of the reader; nil when none runs
	// baseline is closed once the running reader has taken its first
	// fingerprints: a change after that reaches every watcher.
	baseline chan struct{}
}

func newHub(b Backend, poll time.Duration) *hub {
	return &hub{b: b, poll: poll, watchers: map[chan string]struct{}{}}
}

// watch adds a watcher; it gets environment names (dropped when it lags)
// until cancel. baseline is closed once changes from now on are seen (a
// page catches up on anything before by reloading its content then). ok is
// false when too many watch already.
func (h *hub) watch() (ch chan string, baseline <-chan struct{}, cancel func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers) >= maxWatchers {
		return nil, nil, nil, false
	}
	ch = make(chan string, 16)
	h.watchers[ch] = struct{}{}
	if h.stop == nil {
		ctx, stop := context.WithCancel(context.Background())
		h.stop, h.baseline = stop, make(chan struct{})
		go h.read(ctx, h.baseline)
	}
	return ch, h.baseline, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.watchers, ch)
		if len(h.watchers) == 0 && h.stop != nil {
			h.stop()
			h.stop = nil
		}
	}, true
}

// read polls every environment until ctx ends and announces those whose
// state changed since the last poll.
func (h *hub) read(ctx context.Context, baseline chan struct{}) {
	last := map[string][32]byte{}
	t := time.NewTicker(h.poll)
	defer t.Stop()
	first := true
	for {
		for _, name := range h.b.EnvironmentNames() {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			e, err := h.b.Environment(rctx, name)
			cancel()
			if err != nil {
				continue // the page shows the error when it reloads; keep the last fingerprint
			}
			sum := fingerprint(e)
			if old, seen := last[name]; seen && old != sum {
				h.announce(name)
			}
			last[name] = sum
		}
		if first {
			close(baseline)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fingerprint is what a watcher would see change: everything but the time
// the leader last looked.
func fingerprint(e *status.Environment) [32]byte {
	c := *e
	c.ObservedAt = time.Time{}
	b, err := json.Marshal(c)
	if err != nil {
		return [32]byte{}
	}
	return sha256.Sum256(b)
}

func (h *hub) announce(env string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.watchers {
		select {
		case ch <- env:
		default: // a slow reader misses one; its next event reloads everything anyway
		}
	}
}

// events streams "change" events (data: the environment's name) to a
// signed-in reader, as server-sent events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if v := s.who(w, r); v == nil {
		return
	}
	ch, baseline, cancel, ok := s.hub.watch()
	if !ok {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live pages are open; reload later", http.StatusServiceUnavailable)
		return
	}
	defer cancel()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(format string, a ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(heartbeat + 10*time.Second)) // the server's write timeout would end the stream
		if _, err := fmt.Fprintf(w, format, a...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n: stagehand\n\n") {
		return
	}
	// What changed between the page's render and now would otherwise be missed: once the reader sees every
	// change from here on, the page reloads its content ("ready").
	select {
	case <-r.Context().Done():
		return
	case <-baseline:
	}
	if !send("event: ready\ndata: {}\n\n") {
		return
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case env := <-ch:
			b, _ := json.Marshal(map[string]string{"environment": env})
			if !send("event: change\ndata: %s\n\n", b) {
				return
			}
		case <-beat.C:
			if !send(": ping\n\n") {
				return
			}
		}
	}
}
