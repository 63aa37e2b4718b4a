// Package revert rolls back a failed apply (environments.<env>.onFailedRollout:
// rollback): the daemon's worker hands its Reverter the history entry the
// apply would have had and the cause (a rollout that failed, a test or
// evaluation of the delivery sequence that failed, a release rejected).
// The rollback is kept in the environment's state before anything is
// restored (the phase RollingBack), so that the next leader finishes it; the
// images the apply replaced are restored through pkg/reconcile's Restore,
// the entry recorded as rolled back with the failed revision (not applied
// again) in one state write, the gate told the outcome, and the rollback
// hook (the rollback pull request) called. Putting an environment back on
// earlier versions on a person's request is internal/rollback's.
package revert
