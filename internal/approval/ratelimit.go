package approval

import (
	"fmt"
	"time"
)

// RateLimitedError is a gate's call refused by a service's rate limit
// (GitHub's primary or secondary limit) until Until. The daemon names it in
// the environment's status while it lasts, and proposes again at a later
// pass.
type RateLimitedError struct {
	// Service is who refused: "GitHub".
	Service string
	// Until is when the service said it will answer again.
	Until time.Time
	Err   error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%s rate limited until %s: %v", e.Service, e.Until.UTC().Format(time.RFC3339), e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }
