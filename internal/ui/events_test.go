package ui

import (
	"bufio"
	"context"
	"errors"
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

// withRecheck sets how often an open event stream asks the policy again.
func withRecheck(d time.Duration) Option {
	return func(o *options) error { o.recheck = d; return nil }
}

// TestEventStreamEndsWhenReadIsGone: an open stream asks the policy again
// every re-check; it stays open while the reader may read, and closes at the
// first re-check after the right is gone (a login that lost its role on the
// repository) or the policy cannot say; the page's next connection is
// refused.
func TestEventStreamEndsWhenReadIsGone(t *testing.T) {
	const every = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		gone func() (Access, error)
		code int // of the next connection
	}{
		{"lost its role on the repository", func() (Access, error) {
			return Access{Why: "demo has no role on acme/manifests"}, nil
		}, http.StatusForbidden},
		{"the policy cannot say", func() (Access, error) {
			return Access{}, errors.New("GitHub answered 502")
		}, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gone atomic.Bool
			var asked, refused atomic.Int32
			policy := func(context.Context, string, string) (Access, error) {
				asked.Add(1)
				if gone.Load() {
					refused.Add(1)
					return tc.gone()
				}
				return Access{Read: true, Why: "demo has read on acme/manifests"}, nil
			}
			base := serve(t, newBackend(t), WithDemoLogin("demo"), WithPollInterval(time.Hour), WithPolicy(policy), withRecheck(every))
			br := signedIn(t, base)
			resp, body := openStream(t, br)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /events = %d %s", resp.StatusCode, body)
			}
			lines := make(chan string, 64)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					select {
					case lines <- sc.Text():
					default:
					}
				}
			}()
			// Open while the reader may read, through several re-checks.
			before := asked.Load()
			testWait(t, 10*time.Second, "three re-checks of the open stream", func() bool { return asked.Load() >= before+3 })
			select {
			case <-ended:
				t.Fatal("the stream ended while its reader may still read")
			default:
			}
			gone.Store(true)
			took := time.Now()
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the stream is still open 10s after its reader lost the right to read")
			}
			if n := refused.Load(); n != 1 {
				t.Errorf("the stream ended after %d refusals, want at the first re-check after the right was gone", n)
			}
			t.Logf("closed %v after the right was gone (re-check every %v)", time.Since(took), every)
			if resp, _ := openStream(t, br); resp.StatusCode != tc.code {
				t.Errorf("the next GET /events = %d, want %d", resp.StatusCode, tc.code)
			}
		})
	}
}

// testWait polls cond until it holds, failing after d.
func testWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
