package clock

import (
	"net/http"
	"sync"
	"time"
)

// Remote follows another machine's wall clock from the Date headers of its
// responses (Transport). A Date is in whole seconds and was written at some
// instant between sending the request and receiving the answer, so each
// response bounds the offset of that clock from the local one to
// [Date - received, Date + 1s - sent]. Remote keeps the intersection of all
// bounds seen, which narrows to about a round trip; a response outside it
// (either clock was stepped) starts the bounds again from that response.
// Until a first response, Now is the local clock.
type Remote struct {
	local func() time.Time

	mu     sync.Mutex
	lo, hi time.Duration
	known  bool
}

// NewRemote returns a Remote over the local clock (time.Now when nil).
func NewRemote(local func() time.Time) *Remote {
	if local == nil {
		local = time.Now
	}
	return &Remote{local: local}
}

// Now is the remote clock's time: the local clock plus Offset.
func (r *Remote) Now() time.Time {
	off, _ := r.Offset()
	return r.local().Add(off)
}

// Offset is how far the remote clock is ahead of the local one (the middle
// of the bounds), and whether any response was seen yet (0, false if not).
func (r *Remote) Offset() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.known {
		return 0, false
	}
	return r.lo + (r.hi-r.lo)/2, true
}

// Observe takes one response's Date, sent at local time sent and received at
// local time received.
func (r *Remote) Observe(sent, received, date time.Time) {
	if received.Before(sent) {
		sent, received = received, sent
	}
	lo, hi := date.Sub(received), date.Add(time.Second).Sub(sent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.known || lo > r.hi || hi < r.lo {
		r.lo, r.hi, r.known = lo, hi, true
		return
	}
	r.lo, r.hi = max(r.lo, lo), min(r.hi, hi)
}

// Transport returns next (http.DefaultTransport when nil) observing the Date
// header of every response it returns.
func (r *Remote) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &observer{remote: r, next: next}
}

type observer struct {
	remote *Remote
	next   http.RoundTripper
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := o.remote.local()
	resp, err := o.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	// An answer with an Age came from a cache: its Date is when the origin
	// made it, not now, and would set the clock back.
	if date, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil && resp.Header.Get("Age") == "" {
		o.remote.Observe(sent, o.remote.local(), date)
	}
	return resp, nil
}

// WrappedRoundTripper lets client-go find the transport beneath.
func (o *observer) WrappedRoundTripper() http.RoundTripper { return o.next }
