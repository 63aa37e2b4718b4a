package lockapi

import (
	"errors"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/locktest"
)

// fakeClock is locktest's settable clock.
type fakeClock = locktest.Clock

func newFakeClock() *fakeClock { return locktest.NewClock() }

// checkOneWins runs 50 lockers at once and fails t unless exactly one
// succeeds and every other is refused with a *LockedError.
func checkOneWins(t *testing.T, round string, lockNo func(i int) error) {
	t.Helper()
	locktest.OneWins(t, round, lockNo, func(err error) bool {
		var le *lock.LockedError
		return errors.As(err, &le)
	})
}
