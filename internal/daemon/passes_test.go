package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// waitPasses waits until r has ended n more passes of env than from
// (passesOf: a pass is counted after it has written its state and
// status), so that what those passes were to do, or must not do, is done
// by then. A test that proves nothing happens waits on this, not on a
// sleep.
func waitPasses(t *testing.T, r *running, env string, from, n uint64) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%d more passes of %s (from %d)", n, env, from), func() bool {
		return passesOf(t, r, env) >= from+n
	})
}
