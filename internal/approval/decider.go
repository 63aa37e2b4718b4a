package approval

import (
	"context"
	"errors"
	"fmt"
)

// Decider takes decisions for the plan pending in an environment; the daemon
// implements it, and every approval path calls it. Approve accepts only the
// planHash of the plan pending now, for the newest revision, and the plan is
// applied only if the cluster has not changed since (pkg/reconcile's Apply
// refuses a stale plan); Reject records the rejection in the history. Both
// return the plan decided, or a *NotPendingError (errors.Is ErrNotPending)
// naming what is pending now, or an error wrapping ErrUnknownEnvironment.
// The outcome is reported through the Gate's Completed, not by the caller.
type Decider interface {
	Approve(ctx context.Context, env, planHash, approver string) (*Pending, error)
	Reject(ctx context.Context, env, planHash, approver, reason string) (*Pending, error)
}

// ErrUnknownEnvironment is returned for an environment not in the configuration.
var ErrUnknownEnvironment = errors.New("unknown environment")

// ErrNotPending is matched (errors.Is) by a *NotPendingError.
var ErrNotPending = errors.New("plan is not pending")

// NotPendingError refuses an approval or rejection whose planHash is not the
// plan pending now.
type NotPendingError struct {
	Environment string
	PlanHash    string
	// Pending is what is pending now; nil when nothing is.
	Pending *Pending
}

func (e *NotPendingError) Error() string {
	if e.Pending == nil {
		return fmt.Sprintf("plan %s is not pending in environment %s: nothing is pending now", e.PlanHash, e.Environment)
	}
	return fmt.Sprintf("plan %s is not pending in environment %s: pending now is plan %s for revision %s",
		e.PlanHash, e.Environment, e.Pending.PlanHash, e.Pending.Revision)
}

// Is makes errors.Is(err, ErrNotPending) hold.
func (e *NotPendingError) Is(target error) bool { return target == ErrNotPending }
