package lockapi

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2022, 12, 31, 10, 30, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// checkOneWins runs 50 lockers at once and fails t unless exactly one
// succeeds and every other is refused with a *lock.LockedError.
func checkOneWins(t *testing.T, round string, lockNo func(i int) error) {
	t.Helper()
	const n = 50
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		won, locked int
		other       []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := lockNo(i)
			var le *lock.LockedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.As(err, &le):
				locked++
			default:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || locked != n-1 || len(other) > 0 {
		t.Errorf("%s: %d won, %d locked out, other errors %v; want 1 and %d", round, won, locked, other, n-1)
	}
}
