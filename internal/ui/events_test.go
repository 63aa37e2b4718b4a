package ui

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// openStream opens GET /events as br; the stream is closed at the test's end.
func openStream(t *testing.T, br *browser) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, br.base+"/events", nil)
	resp, err := br.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	return resp, ""
}

// TestEventStreamsPerLogin: one signed-in reader may hold a few live pages,
// not every stream of the replica; the streams they close are theirs again.
func TestEventStreamsPerLogin(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithPollInterval(time.Hour))
	br := signedIn(t, base)
	var open []*http.Response
	for i := range maxWatchersPerLogin {
		resp, body := openStream(t, br)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d = %d %s", i, resp.StatusCode, body)
		}
		open = append(open, resp)
	}
	resp, body := openStream(t, br)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "30" ||
		!strings.Contains(body, "demo has 8 live pages open already; close one, or reload later") {
		t.Fatalf("stream %d = %d %q (Retry-After %q), want 503 naming the limit", maxWatchersPerLogin+1, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	open[0].Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := openStream(t, br)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not given back: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond) // the server sees the close on its next write or read
	}
}

// TestHubPlaces: the places of the hub, by login and in all.
func TestHubPlaces(t *testing.T) {
	h := newHub(newBackend(t), time.Hour)
	var cancels []func()
	for range maxWatchersPerLogin {
		_, _, cancel, full := h.watch("mallory")
		if full != "" {
			t.Fatal(full)
		}
		cancels = append(cancels, cancel)
	}
	if _, _, _, full := h.watch("mallory"); full != "mallory has 8 live pages open already; close one, or reload later" {
		t.Errorf("mallory's 9th = %q", full)
	}
	if _, _, cancel, full := h.watch("alice"); full != "" {
		t.Errorf("alice while mallory is full = %q", full)
	} else {
		cancels = append(cancels, cancel)
	}
	cancels[0]()
	cancels[0]() // twice gives back one place, not two
	if _, _, cancel, full := h.watch("mallory"); full != "" {
		t.Errorf("mallory after closing one = %q", full)
	} else {
		cancels = append(cancels, cancel)
	}
	if _, _, cancel, full := h.watch("mallory"); full == "" {
		cancels = append(cancels, cancel)
		t.Error("a cancel called twice gave back two places")
	}
	for i := len(h.watchers); i < maxWatchers; i++ {
		_, _, cancel, full := h.watch(strings.Repeat("x", i%50+1) + string(rune('a'+i/50)))
		if full != "" {
			t.Fatalf("watcher %d: %s", i, full)
		}
		cancels = append(cancels, cancel)
	}
	if _, _, _, full := h.watch("bob"); full != "too many live pages are open (256); reload later" {
		t.Errorf("bob when all are taken = %q", full)
	}
	for _, c := range cancels {
		c()
	}
	if len(h.watchers) != 0 || len(h.perLogin) != 0 || h.stop != nil {
		t.Errorf("after every cancel: %d watchers, %d logins, reader running %v", len(h.watchers), len(h.perLogin), h.stop != nil)
	}
}

// TestEventStreamEndsWithTheSession: a stream opened with a session ends
// when the session expires; the next one asks for a sign-in.
func TestEventStreamEndsWithTheSession(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithPollInterval(time.Hour), WithClock(clock, time.UTC))
	br := signedIn(t, base)
	now.Store(t0.Add(sessionTTL - 200*time.Millisecond).UnixNano())
	resp, body := openStream(t, br)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events = %d %s", resp.StatusCode, body)
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream ended with %v, want its end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its session")
	}
	now.Store(t0.Add(sessionTTL).UnixNano())
	if resp, _ := openStream(t, br); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /events after the session = %d, want 401", resp.StatusCode)
	}
}
