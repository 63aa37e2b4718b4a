// The approval gate.
//
// For every revision whose plan changes something, an environment's worker
// asks a Gate what to do with the plan:
//
//	worker                                  Gate
//	  │ Propose(ctx, proposal) ─────────────▶ publish the plan (check run, nothing, ...)
//	  │ ◀──────────── Decision{Approved: true} → the worker applies at once (auto gate)
//	  │ ◀──────────── Decision{}               → the plan is stored as pending
//	  │
//	  │    (a human decides, later, anywhere)
//	  │ Daemon.Approve(ctx, env, planHash, who) ◀── API, CLI, GitHub check-run button
//	  │ Daemon.Reject(ctx, env, planHash, who, why)
//	  │
//	  │ Superseded(ctx, old, newRevision) ──▶ a newer revision (or a changed plan)
//	  │                                       replaced the pending one
//	  │ Completed(ctx, proposal, outcome) ──▶ applied (succeeded, failed,
//	  │                                       interrupted) or rejected
//
// Approvals arrive through Daemon.Approve and Daemon.Reject, on any replica
// (a replica that does not lead checks the hash against the stored pending
// plan and hands the decision to the leader through the Store), whoever calls
// them: the HTTP API (POST /api/v1/environments/{env}/approve|reject, used by
// `reconciler approve|reject`), or a gate itself, e.g. the GitHub gate when a
// check_run requested_action webhook arrives. Approve accepts only the
// planHash of the plan pending now, for the newest revision; the worker then
// plans again and applies only if the hash is unchanged (pkg/reconcile's
// Apply refuses a stale plan). Anything else is refused with a
// *NotPendingError that names what is pending now. When the leader cannot
// carry out an approval handed over by another replica (re-planning fails),
// it reports Completed with ResultFailed and nothing applied, and proposes
// the still-pending plan again.
//
// Implementations: Auto (skipConfirmation environments: the worker proposes
// to Auto instead of the configured gate, but still reports Completed, and
// Superseded of plans the configured gate proposed, to the configured gate,
// so that every deploy can show on its commit), API (the default for the others:
// publishes nothing, the pending plan is visible in the API and decided over
// it) and, in internal/github, the GitHub check-run gate. Combine gates with
// Gates. Pending plans and history live in the Store, so gates need not keep
// state. Propose must be idempotent: a pending plan whose Propose failed (a
// GitHub outage) is proposed again at every pass until the gate accepts it,
// a new process proposes the pending plan it finds once, and a plan still
// pending is proposed again every WithRepropose period, so a gate can repair
// what it shows (the GitHub gate puts back the buttons of a run whose click
// was lost with the replica that took it).

package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Proposal is one plan for one environment at one revision.
type Proposal struct {
	Environment string
	Revision    string
	// RevisionTime is the commit time of Revision.
	RevisionTime time.Time
	Plan         *reconcile.Plan
}

// Decision is a gate's answer to Propose.
type Decision struct {
	// Approved true makes the worker apply now; false leaves the plan pending
	// until Daemon.Approve or Daemon.Reject is called.
	Approved bool
	// Approver names who approved, for the history ("skipConfirmation").
	Approver string
}

// Outcome is how a proposal ended.
type Outcome struct {
	// Result is ResultSucceeded, ResultFailed, ResultInterrupted or ResultRejected.
	Result   string
	Approver string
	// Message says why it failed or was rejected.
	Message string
	// Apply is pkg/reconcile's result; nil when nothing was applied.
	Apply    *reconcile.Result
	Started  time.Time
	Finished time.Time
}

// Gate decides whether a plan may be applied. Calls for one environment come
// from that environment's worker, one at a time; calls for different
// environments may be concurrent. Errors are logged and counted; they do not
// stop the worker (a Propose error leaves the plan pending).
type Gate interface {
	// Propose publishes a plan that has changes. It must be idempotent: a
	// plan still pending is proposed again after a failed Propose (at every
	// pass) and once by each new process.
	Propose(ctx context.Context, p Proposal) (Decision, error)
	// Superseded withdraws a pending plan: by is the revision whose plan
	// replaces it (it may equal p.Revision when the cluster changed), or ""
	// when nothing is left to apply.
	Superseded(ctx context.Context, p Proposal, by string) error
	// Completed reports how an approved or rejected plan ended.
	Completed(ctx context.Context, p Proposal, o Outcome) error
}

// ErrUnknownEnvironment is returned for an environment not in the configuration.
var ErrUnknownEnvironment = errors.New("unknown environment")

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

// Auto returns the gate of skipConfirmation environments: it approves every
// plan as "skipConfirmation".
func Auto() Gate { return autoGate{} }

type autoGate struct{}

func (autoGate) Propose(context.Context, Proposal) (Decision, error) {
	return Decision{Approved: true, Approver: "skipConfirmation"}, nil
}
func (autoGate) Superseded(context.Context, Proposal, string) error { return nil }
func (autoGate) Completed(context.Context, Proposal, Outcome) error { return nil }

// API returns the gate of approvals over the HTTP API and CLI: it leaves every
// plan pending (the Store publishes it at /api/v1/environments) until
// Daemon.Approve or Daemon.Reject decides.
func API() Gate { return apiGate{} }

type apiGate struct{}

func (apiGate) Propose(context.Context, Proposal) (Decision, error) { return Decision{}, nil }
func (apiGate) Superseded(context.Context, Proposal, string) error  { return nil }
func (apiGate) Completed(context.Context, Proposal, Outcome) error  { return nil }

// Gates combines gates: Propose asks each in order and approves when any
// approves; every gate hears Superseded and Completed. Errors are joined.
func Gates(gates ...Gate) Gate { return multiGate(gates) }

type multiGate []Gate

func (m multiGate) Propose(ctx context.Context, p Proposal) (Decision, error) {
	var out Decision
	var errs []error
	for _, g := range m {
		d, err := g.Propose(ctx, p)
		errs = append(errs, err)
		if d.Approved && !out.Approved {
			out = d
		}
	}
	return out, errors.Join(errs...)
}

func (m multiGate) Superseded(ctx context.Context, p Proposal, by string) error {
	var errs []error
	for _, g := range m {
		errs = append(errs, g.Superseded(ctx, p, by))
	}
	return errors.Join(errs...)
}

func (m multiGate) Completed(ctx context.Context, p Proposal, o Outcome) error {
	var errs []error
	for _, g := range m {
		errs = append(errs, g.Completed(ctx, p, o))
	}
	return errors.Join(errs...)
}

var (
	_ Gate = autoGate{}
	_ Gate = apiGate{}
	_ Gate = multiGate{}
)
