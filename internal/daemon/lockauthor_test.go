package daemon

import (
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// TestLockAuthorIsTheReconciler: the daemon's apply lock is written as the
// reconciler's typed identity, which pkg/lock (importing nothing of
// internal/) spells on its own.
func TestLockAuthorIsTheReconciler(t *testing.T) {
	if LockAuthor != identity.Reconciler.String() || !identity.Parse(LockAuthor).Equal(identity.Reconciler) {
		t.Errorf("LockAuthor = %q, want %q", LockAuthor, identity.Reconciler)
	}
}
