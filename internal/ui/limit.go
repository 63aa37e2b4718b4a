package ui

import (
	"fmt"
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
