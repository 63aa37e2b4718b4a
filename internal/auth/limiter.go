package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxLimited bounds the callers a Limiter remembers: with GitHub logins and
// Kubernetes service accounts there is no fixed list of them.
const MaxLimited = 4096

// Limiter is a token bucket per caller (a principal, a login): perSecond
// requests a second in bursts of burst. Past MaxLimited callers, those
// whose bucket is full again (idle long enough to lose nothing by being
// forgotten) are dropped; one still limited is kept. A nil *Limiter allows
// everything.
type Limiter struct {
	perSecond rate.Limit
	burst     int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// NewLimiter returns a Limiter, or nil (no limit) when perSecond is 0 or less.
func NewLimiter(perSecond float64, burst int) *Limiter {
	if perSecond <= 0 {
		return nil
	}
	return &Limiter{perSecond: rate.Limit(perSecond), burst: burst, buckets: map[string]*rate.Limiter{}}
}

// Burst is the burst each caller may send at once (0 without a limit).
func (l *Limiter) Burst() int {
	if l == nil {
		return 0
	}
	return l.burst
}

// Allow takes one request from caller's bucket at now, or says how long
// until the next one would be allowed.
func (l *Limiter) Allow(caller string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.buckets[caller]
	if !ok {
		if len(l.buckets) >= MaxLimited {
			for k, old := range l.buckets {
				if old.TokensAt(now) >= float64(l.burst) {
					delete(l.buckets, k)
				}
			}
		}
		b = rate.NewLimiter(l.perSecond, l.burst)
		l.buckets[caller] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}
