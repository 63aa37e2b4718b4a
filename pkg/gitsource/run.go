package gitsource

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/robfig/cron/v3"
)

// Trigger asks Run to poll now. It never blocks. A trigger after a quiet
// spell polls at once; triggers that arrive while one is pending, or within
// the debounce window after a poll began, coalesce into one poll at the end
// of the window.
func (s *Source) Trigger() {
	select {
	case s.pacer.trigger <- struct{}{}:
	default:
	}
}

// Run polls until ctx is done: at once, then on the interval (with jitter) or
// the cron schedule, and whenever Trigger is called. After a failed poll it
// retries with exponential backoff (capped); a refused revision is not a
// failure. onChange is called, from Run's goroutine, whenever the current
// snapshot differs from the one it was last called with — the first one
// included, also when it comes from the cache after a restart while the remote
// is unchanged or unreachable. Polls wait while it runs. Run returns ctx's error.
func (s *Source) Run(ctx context.Context, onChange func(context.Context, Snapshot)) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	delivered := ""
	var began time.Time // when the last poll began (zero: none yet)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case <-s.pacer.trigger:
			if !s.pacer.debounce(ctx, began) {
				return ctx.Err()
			}
		}
		began = time.Now()
		_, _, err := s.poll(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, ErrUnverified) {
			failures++
		} else {
			failures = 0
		}
		if snap, ok := s.Latest(); ok && snap.Revision != delivered {
			delivered = snap.Revision
			onChange(ctx, snap)
		}
		wait := s.pacer.next(time.Now(), failures)
		s.mu.Lock()
		s.status.NextPoll = s.opts.now().Add(wait)
		s.mu.Unlock()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// pacer times Run's polls: the interval (with jitter) or the cron
// schedule, the backoff after failures, and the triggers, debounced.
type pacer struct {
	interval time.Duration
	schedule cron.Schedule
	o        options // jitter, backoff and debounce
	trigger  chan struct{}
}

// debounce waits until the debounce window after the last poll, begun at
// began, has passed, absorbing further triggers. A trigger after a quiet
// spell waits for nothing: a push webhook's fetch is not delayed, and a
// burst of them makes at most one more poll per window (which finds the
// head it fetched, unless another push came meanwhile).
func (p *pacer) debounce(ctx context.Context, began time.Time) bool {
	wait := p.o.debounce - time.Since(began)
	if p.o.debounce <= 0 || wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-p.trigger:
		case <-t.C:
			return true
		}
	}
}

// next is the delay before the next poll after one with the given number of
// consecutive failures.
func (p *pacer) next(now time.Time, failures int) time.Duration {
	if failures > 0 {
		return backoff(p.o.backoffMin, p.o.backoffMax, failures)
	}
	if p.schedule != nil {
		return p.schedule.Next(now).Sub(now)
	}
	d := p.interval
	if p.o.jitter > 0 {
		d += time.Duration(rand.Float64() * p.o.jitter * float64(p.interval))
	}
	return d
}

// backoff is first×2^(failures-1), capped at max.
func backoff(first, max time.Duration, failures int) time.Duration {
	d := first
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= max || d <= 0 {
			return max
		}
	}
	return min(d, max)
}
