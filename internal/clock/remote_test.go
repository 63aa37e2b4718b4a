package clock

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRemoteObserve(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	type sample struct{ sent, received, date time.Time }
	for _, c := range []struct {
		name    string
		samples []sample
		lo, hi  time.Duration
	}{
		{
			name:    "one response bounds the offset by the round trip and the Date's second",
			samples: []sample{{t0, t0.Add(200 * time.Millisecond), t0.Add(2 * time.Hour)}},
			lo:      2*time.Hour - 200*time.Millisecond, hi: 2*time.Hour + time.Second,
		},
		{
			name: "responses narrow the bounds",
			samples: []sample{
				{t0, t0.Add(100 * time.Millisecond), t0.Add(-2 * time.Hour)},
				{t0.Add(1700 * time.Millisecond), t0.Add(1800 * time.Millisecond), t0.Add(-2*time.Hour + 2*time.Second)},
			},
			// (-2h-100ms, -2h+1s) ∩ (-2h+200ms, -2h+1.3s)
			lo: -2*time.Hour + 200*time.Millisecond, hi: -2*time.Hour + time.Second,
		},
		{
			name: "a response outside the bounds (a clock stepped) starts again",
			samples: []sample{
				{t0, t0.Add(100 * time.Millisecond), t0},
				{t0.Add(time.Minute), t0.Add(time.Minute + 100*time.Millisecond), t0.Add(time.Minute + 2*time.Hour)},
			},
			lo: 2*time.Hour - 100*time.Millisecond, hi: 2*time.Hour + time.Second,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewRemote(func() time.Time { return t0 })
			if off, ok := r.Offset(); ok || off != 0 || !r.Now().Equal(t0) {
				t.Fatalf("before any response: offset %s, %v, now %s; want the local clock", off, ok, r.Now())
			}
			for _, s := range c.samples {
				r.Observe(s.sent, s.received, s.date)
			}
			off, ok := r.Offset()
			if want := c.lo + (c.hi-c.lo)/2; !ok || off != want {
				t.Errorf("offset = %s, %v; want %s (the middle of [%s, %s])", off, ok, want, c.lo, c.hi)
			}
			if !r.Now().Equal(t0.Add(off)) {
				t.Errorf("Now = %s, want local + offset %s", r.Now(), t0.Add(off))
			}
		})
	}
}

// TestRemoteTransport: a client whose clock is two hours behind, talking to
// a server two hours ahead of the host, reads the server's time from its
// responses to within the Date header's second.
func TestRemoteTransport(t *testing.T) {
	const ahead = 2 * time.Hour
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
	}))
	defer srv.Close()
	local := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	r := NewRemote(local)
	client := &http.Client{Transport: r.Transport(nil)}
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := r.Now().Sub(time.Now().Add(ahead)); d < -time.Second || d > time.Second {
		t.Errorf("Remote.Now is %s off the server's clock", d)
	}
	off, ok := r.Offset()
	if d := off - 2*ahead; !ok || d < -time.Second || d > time.Second {
		t.Errorf("offset = %s, %v; want about %s", off, ok, 2*ahead)
	}
}

// TestRemoteTransportSkipsCachedAnswers: an answer with an Age (from a
// cache: its Date is when the origin made it) does not set the clock.
func TestRemoteTransportSkipsCachedAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))
		w.Header().Set("Age", "3600")
	}))
	defer srv.Close()
	r := NewRemote(nil)
	resp, err := (&http.Client{Transport: r.Transport(nil)}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if off, ok := r.Offset(); ok {
		t.Errorf("a cached answer an hour old set the offset to %s", off)
	}
}
