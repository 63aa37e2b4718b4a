package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Decider takes decisions for the plan pending in an environment; the daemon
// implements it, and every approval path calls it. Approve accepts only the
// planHash of the plan pending now, for the newest revision, and counts the
// approver once: the plan is applied once it has the environment's required
// number of distinct approvers (Pending.Complete), and only if the cluster has
// not changed since (pkg/reconcile's Apply refuses a stale plan); until then it
// returns the plan with the approvals so far. An approver the policy keeps
// from approving (four-eyes) gets a *RefusedError (errors.Is ErrRefused).
// Reject records the rejection in the history. Both
// return the plan decided, or a *NotPendingError (errors.Is ErrNotPending)
// naming what is pending now, or an error wrapping ErrUnknownEnvironment.
// The outcome is reported through the Gate's Completed, not by the caller.
//
// The caller is the verified principal (identity.Principal): the kind of credential that proved it and
// the person it acts for, never a bare name, so that a GitHub login spelled like a named token is not
// that token. Records write its ID as kind:name ("github:alice", "token:ci-deployer").
type Decider interface {
	Approve(ctx context.Context, env, planHash string, approver identity.Principal) (*Pending, error)
	Reject(ctx context.Context, env, planHash string, why Why) (*Pending, error)
}

// Why is who takes a decision that carries a reason, and the reason: a
// rejection (Decider.Reject; the reason may be empty) or a break-glass
// (BreakGlasser.BreakGlass; the reason is required, see CheckReason).
type Why struct {
	By     identity.Principal
	Reason string
}

// ErrRefused is matched (errors.Is) by a *RefusedError.
var ErrRefused = errors.New("approval refused")

// RefusedError refuses an approval by someone the environment's policy keeps from approving this plan
// (four-eyes: an author of what it deploys). Nothing is recorded; the plan stays pending.
type RefusedError struct {
	Environment string
	Approver    string
	// Reason says why, for the person refused: "alice wrote 3f2a9c1d (alice@acme.com), ...".
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s may not approve this plan of environment %s: %s", e.Approver, e.Environment, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Authors names who wrote a range of commits, for four-eyes: the authors and committers of the commits
// after base up to and including head (of head alone when base is ""), the co-authors their messages name
// (Co-authored-by trailers) and, where the implementation knows them, the authors and mergers of the pull
// requests that brought them, as GitHub logins or e-mail addresses, whichever the implementation knows.
// An implementation that cannot tell returns an error, and one that finds an e-mail address it cannot tie
// to a person an *UntiedAuthorError: the approval is then refused, never waved through.
type Authors interface {
	Authors(ctx context.Context, base, head string) ([]string, error)
}

// UntiedAuthorError is an Authors answer for a range in which an author's or co-author's e-mail address
// is tied to no account (GitHub knows no login for it): who wrote that commit cannot be told, so nobody's
// approval can be shown not to be theirs.
type UntiedAuthorError struct {
	// Email is the address; Commit the commit (full SHA) whose author or co-author it is; Role says
	// which ("author", "co-author").
	Email, Commit, Role string
}

func (e *UntiedAuthorError) Error() string {
	return fmt.Sprintf("the %s e-mail address %q of commit %.12s is tied to no GitHub account", e.Role, e.Email, e.Commit)
}

// ErrBusy is matched (errors.Is) by a decision that could not be taken now because too many wait already
// (the decisions a standby hands to the leader): nothing was recorded; the caller may try again shortly.
var ErrBusy = errors.New("too many decisions waiting")

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

// Deliveries is what a Decider may also implement: a record of the webhook deliveries that reached an
// approval path, shared by every replica and kept across restarts (in the state), so that one delivery
// decides at most once wherever and whenever it arrives. The record is bounded: the oldest are forgotten,
// and an approval path must not rely on it alone (the GitHub handler also requires the click to be for
// the decision its check run awaits now).
type Deliveries interface {
	// FirstDelivery records d and reports whether it is new: false when its ID (unless empty) or its Sum
	// was recorded before.
	FirstDelivery(ctx context.Context, d Delivery) (bool, error)
	// ForgetDelivery removes d from the record, for a delivery recorded whose handling failed before it
	// changed anything (the same click, whose body is the same, may then be handled again).
	ForgetDelivery(ctx context.Context, d Delivery) error
}

// Delivery names one webhook delivery: its ID (X-GitHub-Delivery; "" when unknown) and Sum, the hex
// SHA-256 of its body (the signature covers the body only, so a body sent again under a new ID is the
// same delivery).
type Delivery struct {
	ID  string
	Sum string
}
