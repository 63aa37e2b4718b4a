package approval

import (
	"context"
	"errors"
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
	// Notes are shown with the plan where it awaits approval (the check
	// run): a rollback's hold on the environment, an incident rollback's pin.
	Notes []string
	// Release, when not zero, is when the plan, applied and verified, began
	// to wait for its release approval (the sequence's approval task after
	// deployment): approving releases it, rejecting fails the deploy. The
	// gate shows it awaiting a decision again, on the plan's planHash.
	Release time.Time
}

// Decision is a gate's answer to Propose.
type Decision struct {
	// Approved true makes the worker apply now; false leaves the plan pending
	// until a Decider's Approve or Reject decides.
	Approved bool
	// Approver names who approved, for the history (AutoApprover).
	Approver string
}

// Outcome is how a proposal ended.
type Outcome struct {
	// Result is ResultSucceeded, ResultFailed, ResultInterrupted or ResultRejected.
	Result string
	// Approver is who approved or rejected; several approvers joined by ", " (see Approvers).
	Approver string
	// Approvers lists the approvers of a plan that needed more than one, in the order they approved.
	Approvers []string
	// Message says why it failed or was rejected.
	Message string
	// Apply is pkg/reconcile's result; nil when nothing was applied.
	Apply *reconcile.Result
	// Sequence is the result of the environment's delivery sequence (pass,
	// warning or fail) once it ran to its end; "" when it did not (a
	// rejection, an interruption). A warning leaves Result succeeded.
	Sequence string
	Started  time.Time
	Finished time.Time
}

// Gate is told about every plan that has changes and decides whether it may
// be applied at once. Calls for one environment come from that environment's
// worker, one at a time; calls for different environments may be concurrent.
// Errors are logged and counted; they do not stop the worker (a Propose error
// leaves the plan pending).
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

// Starter is what a Gate may also implement to hear that an approved plan's apply is under way (its first
// workload patched, or the apply over), before Completed reports how it ended: a GitHub deployment shows
// "in progress" for the length of a rollout, say. The worker calls Started without holding up the apply and
// waits for it before calling Completed; errors are logged and counted like Completed's. A process that
// continues an interrupted apply calls Started again, so it must be idempotent.
type Starter interface {
	Started(ctx context.Context, p Proposal, approver string) error
}

// Deferrer is what a Gate may also implement to hear that an approved (or auto-approved) plan waits for
// its environment's deploy window (environments.<env>.windows) instead of being applied: why says so and
// until when ("waiting for the deploy window (inside the deny window year-end): opens …"). The worker calls
// it when it defers the plan (again after a restart: it must be idempotent); errors are logged and counted
// like Completed's.
type Deferrer interface {
	Deferred(ctx context.Context, p Proposal, why string) error
}

// Tallier is what a Gate may also implement to show the approvals of a plan that needs more than one: the
// worker calls Tally after each approval that leaves p pending (approvers so far, of required), so that
// the gate can show "1 of 2 approvals: alice" and keep asking. Errors are logged and counted like
// Propose's.
type Tallier interface {
	Tally(ctx context.Context, p Proposal, approvers []string, required int) error
}

// AutoApprover is the approver Auto records: identity.SkipConfirmation written as kind:name.
const AutoApprover = "stagehand:skipConfirmation"

// legacyAutoApprover is how AutoApprover was written before identities were typed.
const legacyAutoApprover = "skipConfirmation"

// IsAuto reports whether approver, as a record names it, is Auto's: AutoApprover, or the bare
// "skipConfirmation" of records written before identities were typed (no credential may carry that
// name: identity.Reserved).
func IsAuto(approver string) bool {
	return approver == AutoApprover || approver == legacyAutoApprover
}

// Auto returns the gate of skipConfirmation environments: it approves every
// plan as AutoApprover.
func Auto() Gate { return autoGate{} }

// AutoAs is Auto approving as approver: in a skipConfirmation environment,
// the plan of an incident rollback's pin is approved by whoever rolled back.
func AutoAs(approver string) Gate { return autoGate{approver: approver} }

type autoGate struct{ approver string }

func (g autoGate) Propose(context.Context, Proposal) (Decision, error) {
	if g.approver != "" {
		return Decision{Approved: true, Approver: g.approver}, nil
	}
	return Decision{Approved: true, Approver: AutoApprover}, nil
}
func (autoGate) Superseded(context.Context, Proposal, string) error { return nil }
func (autoGate) Completed(context.Context, Proposal, Outcome) error { return nil }

// Manual returns the gate that publishes nothing and leaves every plan
// pending until a Decider decides (over the HTTP API and the CLI): the
// pending plan is visible at /api/v1/environments.
func Manual() Gate { return manualGate{} }

type manualGate struct{}

func (manualGate) Propose(context.Context, Proposal) (Decision, error) { return Decision{}, nil }
func (manualGate) Superseded(context.Context, Proposal, string) error  { return nil }
func (manualGate) Completed(context.Context, Proposal, Outcome) error  { return nil }

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

// Tally tells every gate that implements Tallier.
func (m multiGate) Tally(ctx context.Context, p Proposal, approvers []string, required int) error {
	var errs []error
	for _, g := range m {
		if t, ok := g.(Tallier); ok {
			errs = append(errs, t.Tally(ctx, p, approvers, required))
		}
	}
	return errors.Join(errs...)
}

// Started tells every gate that implements Starter.
func (m multiGate) Started(ctx context.Context, p Proposal, approver string) error {
	var errs []error
	for _, g := range m {
		if s, ok := g.(Starter); ok {
			errs = append(errs, s.Started(ctx, p, approver))
		}
	}
	return errors.Join(errs...)
}

// Deferred tells every gate that implements Deferrer.
func (m multiGate) Deferred(ctx context.Context, p Proposal, why string) error {
	var errs []error
	for _, g := range m {
		if d, ok := g.(Deferrer); ok {
			errs = append(errs, d.Deferred(ctx, p, why))
		}
	}
	return errors.Join(errs...)
}

var (
	_ Deferrer = multiGate{}
	_ Gate     = autoGate{}
	_ Gate     = manualGate{}
	_ Gate     = multiGate{}
	_ Starter  = multiGate{}
	_ Tallier  = multiGate{}
)
