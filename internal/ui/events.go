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

// maxWatchers bounds the open event streams of one replica, and
// maxWatchersPerLogin those of one person (a few tabs), so that one
// signed-in reader cannot take every stream for themselves.
const (
	maxWatchers         = 256
	maxWatchersPerLogin = 8
)

// heartbeat is how often an idle stream gets a comment, so proxies keep it.
const heartbeat = 20 * time.Second

// recheck is how often an open stream asks the policy again whether its
// reader may still read (options.recheck; tests shorten it).
const recheck = time.Minute

// hub reads the state while someone watches and tells every watcher which
// environment changed: one reader for all of them, none while nobody
// watches. Changes come from any replica (an approval made on another one,
// the leader's rollout), since every replica reads the same Store.
type hub struct {
	b    Backend
	poll time.Duration

	mu       sync.Mutex
	watchers map[chan string]struct{}
	perLogin map[string]int
	stop     context.CancelFunc // of the reader; nil when none runs
	// baseline is closed once the running reader has taken its first
	// fingerprints: a change after that reaches every watcher.
	baseline chan struct{}
}

func newHub(b Backend, poll time.Duration) *hub {
	return &hub{b: b, poll: poll, watchers: map[chan string]struct{}{}, perLogin: map[string]int{}}
}

// watch adds a watcher for login; it gets environment names (dropped when
// it lags) until cancel. baseline is closed once changes from now on are
// seen (a page catches up on anything before by reloading its content
// then). full says why there is no place: too many watch already, in all or
// as login ("" when ch was added).
func (h *hub) watch(login string) (ch chan string, baseline <-chan struct{}, cancel func(), full string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(h.watchers) >= maxWatchers:
		return nil, nil, nil, fmt.Sprintf("too many live pages are open (%d); reload later", maxWatchers)
	case h.perLogin[login] >= maxWatchersPerLogin:
		return nil, nil, nil, fmt.Sprintf("%s has %d live pages open already; close one, or reload later", login, maxWatchersPerLogin)
	}
	ch = make(chan string, 16)
	h.watchers[ch] = struct{}{}
	h.perLogin[login]++
	if h.stop == nil {
		ctx, stop := context.WithCancel(context.Background())
		h.stop, h.baseline = stop, make(chan struct{})
		go h.read(ctx, h.baseline)
	}
	return ch, h.baseline, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.watchers[ch]; !ok {
			return // cancelled before
		}
		delete(h.watchers, ch)
		if h.perLogin[login]--; h.perLogin[login] <= 0 {
			delete(h.perLogin, login)
		}
		if len(h.watchers) == 0 && h.stop != nil {
			h.stop()
			h.stop = nil
		}
	}, ""
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
// signed-in reader, as server-sent events, until the session expires or,
// asked again every options.recheck, the policy no longer lets the reader
// read (a login that lost its role on the repository) or cannot say.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	v := s.guard.who(w, r)
	if v == nil {
		return
	}
	ch, baseline, cancel, full := s.hub.watch(v.Login)
	if full != "" {
		w.Header().Set("Retry-After", "30")
		http.Error(w, full, http.StatusServiceUnavailable)
		return
	}
	defer cancel()
	// The stream was let in by the session's cookie: it ends when the session does (the page's next
	// connection then asks for a sign-in).
	var left time.Duration // none when the session expired since who looked
	if se := s.cookies.session(r); se != nil {
		left = time.Unix(se.Expires, 0).Sub(s.o.now())
	}
	end := time.NewTimer(left)
	defer end.Stop()
	// And it was let in by the policy's answer at that moment: a right taken away since ends it within
	// one re-check, and the page's next connection is refused (403).
	check := time.NewTicker(s.o.recheck)
	defer check.Stop()
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
	for ready := false; !ready; {
		select {
		case <-r.Context().Done():
			return
		case <-end.C:
			return
		case <-check.C:
			if !s.mayStillRead(r.Context(), v.Login) {
				return
			}
		case <-baseline:
			ready = true
		}
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
		case <-end.C:
			return
		case <-check.C:
			if !s.mayStillRead(r.Context(), v.Login) {
				return
			}
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

// mayStillRead asks the policy again whether login may read: an error is
// a no, since a stream is kept only while its reader is known to be let in.
func (s *Server) mayStillRead(ctx context.Context, login string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	acc, err := s.o.policy(ctx, login, "")
	return err == nil && acc.Read
}
