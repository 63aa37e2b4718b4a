package config

import "math"

// validate checks the registry: keys.
func (r *Registry) validate(bad func(field, format string, a ...any)) {
	if r.RateLimit != nil && (*r.RateLimit < 0 || math.IsNaN(*r.RateLimit) || math.IsInf(*r.RateLimit, 0)) {
		bad("registry.rateLimit", "must be a number of requests a second, 0 or more (0: no limit), got %v", *r.RateLimit)
	}
	if r.DigestCacheTTL != nil && r.DigestCacheTTL.Duration < 0 {
		bad("registry.digestCacheTTL", "must not be negative (0s: no cache), got %s", r.DigestCacheTTL.Duration)
	}
}
