package fault

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRateLimit is the hourly request budget the server reports: far more than GitHub's 5,000 for an
// App installation, so that long benchmarks never run out; SetRateLimit gives a test GitHub's.
const DefaultRateLimit = 1_000_000

// RateLimitHeaders sets GitHub's primary rate-limit headers on an installation's answer and counts it
// against the budget, as GitHub does: a 304 answer to a conditional request is free, and /app/ endpoints
// (the App's JWT) have a budget of their own, not reported here. Headers an injected fault set are kept.
func (s *Injector) RateLimitHeaders(h http.Header, route string, status int) {
	if strings.HasPrefix(route, "/app/") || h.Get("X-RateLimit-Remaining") != "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rateReset.IsZero() || !time.Now().Before(s.rateReset) {
		s.rateReset, s.rateUsed = time.Now().Add(time.Hour).Truncate(time.Second), 0
	}
	if status != http.StatusNotModified {
		s.rateUsed++
	}
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(s.rateLimit-s.rateUsed, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(s.rateUsed))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.rateReset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// RateLimitUsed returns how many requests have counted against the rate limit in the current window.
func (s *Injector) RateLimitUsed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateUsed
}

// SetRateLimit sets the hourly budget the server reports from now on, and how much of it is left in the
// current window.
func (s *Injector) SetRateLimit(limit, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimit, s.rateUsed = limit, limit-remaining
}
