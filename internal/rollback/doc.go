// Package rollback puts an environment back on versions that ran before:
// Rollbacker (the API's api.Rollbacker) opens the environment's rollback pull
// request through internal/prbot, holds the bots off the environment with a
// hold in the lock service, and in incident mode (--now) pins the
// rolled-back versions in the reconciler and approves the plan the pin makes.
// It also ends holds: on `reconciler release`, and when the rollback pull
// request merges.
//
// What it asks of the reconciler (the history, the pin, the environment's
// status and approvals) is the Reconciler interface, which internal/daemon's
// Daemon implements; the history id, "previous" or revision a rollback names
// is resolved by pure logic (target.go) over the history's entries.
package rollback
