package fault

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault makes the server answer matching requests with an error instead of handling them. Requests are
// still validated first, so a client's retry of an invalid call is caught too.
type Fault struct {
	// Method and Route select requests ("POST", "/repos/{owner}/{repo}/check-runs"); empty matches all.
	Method string
	Route  string
	// Status is the error status (502, 503, 429, 403...). Zero with Delay set only slows the request down.
	Status int
	// Times is how many matching requests the fault answers (default 1).
	Times int
	// RetryAfter sets a Retry-After header in whole seconds (GitHub's secondary rate limit).
	RetryAfter time.Duration
	// RateLimitReset sets X-RateLimit-Remaining: 0 and X-RateLimit-Reset (GitHub's primary rate limit).
	RateLimitReset time.Time
	// Delay holds the request this long before answering.
	Delay time.Duration
}

// New returns an injector adding latency to every answer, reporting DefaultRateLimit.
func New(latency time.Duration) *Injector {
	return &Injector{latency: latency, rateLimit: DefaultRateLimit}
}

// Injector is what goes wrong on purpose: injected error answers, latency added to every answer, and the
// primary rate limit the answers report (ratelimit.go).
type Injector struct {
	mu        sync.Mutex
	faults    []*Fault
	latency   time.Duration
	rateLimit int       // the budget reported in X-RateLimit-Limit (ratelimit.go)
	rateUsed  int       // requests counted against it in the window
	rateReset time.Time // end of the window
}

// SetLatency changes the delay added to every response.
func (s *Injector) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Delay is the latency added to every response.
func (s *Injector) Delay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latency
}

// Inject adds a fault; faults are consumed in the order they were added.
func (s *Injector) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// Left counts the injected fault answers not yet given.
func (s *Injector) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.Times
	}
	return n
}

// Take returns the first fault matching a request (method, OpenAPI route template) and counts it used; nil
// for none.
func (s *Injector) Take(method, route string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == method) && (f.Route == "" || f.Route == route) {
			c := *f
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return &c
		}
	}
	return nil
}

// Answers sleeps for the fault's delay; it reports whether the fault answers the request itself.
func (f *Fault) Answers() bool {
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	return f.Status != 0
}

// Write answers the request with the fault's error, as GitHub words it.
func (f *Fault) Write(w http.ResponseWriter) {
	h := w.Header()
	msg := "Server Error"
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
		msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	}
	if !f.RateLimitReset.IsZero() {
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(f.RateLimitReset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		msg = "API rate limit exceeded for installation."
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})
}
