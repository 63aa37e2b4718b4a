package githubtest

import (
	"fmt"
	"time"
)

type options struct {
	tokenTTL time.Duration
	latency  time.Duration
	appID    int64
	instID   int64
}

// Option configures a Server.
type Option func(*options) error

// WithTokenTTL sets how long installation tokens live (default one hour). ghinstallation refreshes a token
// that expires within a minute, so a TTL under a minute makes every request fetch a fresh one.
func WithTokenTTL(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("WithTokenTTL(%s): want a positive lifetime", d)
		}
		o.tokenTTL = d
		return nil
	}
}

// WithLatency delays every response by d.
func WithLatency(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("WithLatency(%s): want zero or more", d)
		}
		o.latency = d
		return nil
	}
}

// WithApp sets the GitHub App id and its installation id (defaults 1001 and 2002).
func WithApp(appID, installationID int64) Option {
	return func(o *options) error {
		if appID <= 0 || installationID <= 0 {
			return fmt.Errorf("WithApp(%d, %d): want positive ids, as GitHub gives", appID, installationID)
		}
		o.appID, o.instID = appID, installationID
		return nil
	}
}

// newOptions applies opts to the defaults: tokens live an hour, App 1001 with installation 2002, no latency.
func newOptions(opts ...Option) (options, error) {
	o := options{tokenTTL: time.Hour, appID: 1001, instID: 2002}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}
