// Package locktest holds what the tests of pkg/lock and of its REST API
// (pkg/lock/lockapi) share: a settable clock and a race of many lockers of
// which exactly one must win. It imports nothing of pkg/lock, so that
// pkg/lock's own tests use it too.
package locktest

import (
	"sync"
	"testing"
	"time"
)

// Clock is a settable time, starting at 2022-12-31 10:30 UTC.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at 2022-12-31 10:30 UTC.
func NewClock() *Clock {
	return &Clock{t: time.Date(2022, 12, 31, 10, 30, 0, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// OneWins runs 50 lockers at once and fails t unless exactly one succeeds
// and every other is refused with an error locked reports as a refusal by
// a lock (a *lock.LockedError).
func OneWins(t *testing.T, round string, lockNo func(i int) error, locked func(error) bool) {
	t.Helper()
	const n = 50
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		won, refuse int
		other       []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := lockNo(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case locked(err):
				refuse++
			default:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || refuse != n-1 || len(other) > 0 {
		t.Errorf("%s: %d won, %d locked out, other errors %v; want 1 and %d", round, won, refuse, other, n-1)
	}
}
