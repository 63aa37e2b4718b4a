package auth

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// Default rate of remote verifications (GET /user at GitHub, TokenReview at
// the Kubernetes API server) for tokens not in the caches: a token is
// verified once a minute, so 20 a second serve over a thousand people,
// while a flood of made-up tokens costs GitHub and the API server at most
// that many requests.
const (
	DefaultVerifyRate  = 20
	DefaultVerifyBurst = 40
)

// WithVerifyRate bounds the remote verifications of tokens not cached yet
// to perSecond, in bursts of up to burst (defaults DefaultVerifyRate and
// DefaultVerifyBurst). Anyone who can reach the API can send tokens that
// look like GitHub or Kubernetes ones; past the limit they are answered 429
// with Retry-After instead of being asked about. perSecond 0 removes the bound.
func WithVerifyRate(perSecond float64, burst int) Option {
	return func(o *options) error {
		if perSecond < 0 || burst < 1 && perSecond > 0 {
			return fmt.Errorf("WithVerifyRate(%v, %d): want a rate of zero or more and a burst of at least 1", perSecond, burst)
		}
		o.verifyRate, o.verifyBurst = perSecond, burst
		return nil
	}
}

// throttle is the shared budget of remote verifications; nil is unbounded.
type throttle struct {
	l   *rate.Limiter
	now func() time.Time
}

func newThrottle(perSecond float64, burst int, now func() time.Time) *throttle {
	if perSecond <= 0 {
		return nil
	}
	return &throttle{l: rate.NewLimiter(rate.Limit(perSecond), burst), now: now}
}

// take spends one remote verification, or returns a 429 *Error saying when
// to come back.
func (t *throttle) take() error {
	if t == nil {
		return nil
	}
	now := t.now()
	r := t.l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	r.CancelAt(now)
	return &Error{Status: http.StatusTooManyRequests, RetryAfter: time.Duration(math.Ceil(d.Seconds())) * time.Second,
		Message: "too many new tokens are being verified right now (GitHub GET /user, Kubernetes TokenReview); retry after the Retry-After seconds"}
}
