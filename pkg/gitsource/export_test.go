package gitsource

import "time"

// Backoff and NextDelay expose the scheduling arithmetic to tests.
var Backoff = backoff

func NextDelay(s *Source, now time.Time, failures int) time.Duration {
	return s.pacer.next(now, failures)
}

// WithMaxPacks sets the pack count above which the cache is compacted.
func WithMaxPacks(n int) Option {
	return func(o *options) error { o.maxPacks = n; return nil }
}
