package ui

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Default per-login request rate of the page: every page and form reads
// each environment's state from the API server, so one signed-in reader
// reloading in a loop must not become the API server's (and the applying
// leader's) load. Live updates reload a page once per change; twenty a
// second in bursts of a hundred leave room for many tabs.
const (
	DefaultRatePerSecond = 20
	DefaultRateBurst     = 100
)

// maxLimited bounds the logins remembered; past it the buckets start over.
const maxLimited = 4096

// WithRateLimit sets how many requests a second one login may make to the
// page's routes that read the state, in bursts of burst (defaults
// DefaultRatePerSecond and DefaultRateBurst); perSecond 0 lifts the limit.
// Past it the answer is 429 with Retry-After.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(o *options) error {
		if perSecond < 0 || perSecond > 0 && burst < 1 {
			return fmt.Errorf("rate limit %v/s, burst %d: want a rate of zero or more and a burst of at least 1", perSecond, burst)
		}
		o.ratePerSecond, o.rateBurst = perSecond, burst
		return nil
	}
}

// limiter is a token bucket per login.
type limiter struct {
	perSecond rate.Limit
	burst     int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{perSecond: rate.Limit(perSecond), burst: burst, buckets: map[string]*rate.Limiter{}}
}

// allow takes one request from login's bucket at now, or says how long
// until the next one would be allowed.
func (l *limiter) allow(login string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.buckets[login]
	if !ok {
		if len(l.buckets) >= maxLimited {
			clear(l.buckets)
		}
		b = rate.NewLimiter(l.perSecond, l.burst)
		l.buckets[login] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d == 0 {
		return true, 0
	}
	r.CancelAt(now)
	return false, d
}

// tooMany answers a page saying when to come back.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, login string, wait time.Duration) {
	secs := int(math.Max(1, math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s sent more than %d requests in a row; wait %d s and reload.", login, s.limit.burst, secs))
}
