package dora

import (
	"errors"
	"fmt"
	"time"
)

// Option configures a Reporter or a Counter.
type Option func(*options) error

type options struct {
	commits        Commits
	rollbackWindow time.Duration
	now            func() time.Time
}

func newOptions(opts []Option) (options, error) {
	o := options{rollbackWindow: DefaultRollbackWindow, now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// WithCommits dates the first commit of each deploy's range (lead time);
// without it no deploy has a lead time. It is wrapped in a CommitCache.
func WithCommits(c Commits) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("configuring dora: nil commits")
		}
		if _, ok := c.(*CommitCache); !ok {
			c = NewCommitCache(c)
		}
		o.commits = c
		return nil
	}
}

// WithRollbackWindow is how long after a deploy an incident rollback marks
// it as a change failure (dora.rollbackWindow; default DefaultRollbackWindow).
func WithRollbackWindow(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("configuring dora: rollback window %s: want a positive duration", d)
		}
		o.rollbackWindow = d
		return nil
	}
}

// WithClock sets where a report's end (now) comes from: the clock the
// history's times were written by (the API server's).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("configuring dora: nil clock")
		}
		o.now = now
		return nil
	}
}
