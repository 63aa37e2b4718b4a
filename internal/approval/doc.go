// Package approval is the contract between the reconciler's environment
// workers and the ways a person (or a rule) approves a plan: the Gate a
// worker proposes each plan to, the Decider that takes a decision for the
// plan pending now, and the records a plan leaves behind (Pending while it
// waits, InFlight while it is applied, an Entry in the history).
//
//	worker (internal/daemon)                Gate (Auto, Manual, internal/github)
//	  │ Propose(ctx, proposal) ─────────────▶ publish the plan (check run, nothing, ...)
//	  │ ◀──────────── Decision{Approved: true} → the worker applies at once (Auto)
//	  │ ◀──────────── Decision{}               → the plan is stored as Pending
//	  │
//	  │    (a human decides, later, anywhere)
//	  │ Decider.Approve(ctx, env, planHash, who) ◀── HTTP API (internal/api), CLI,
//	  │ Decider.Reject(ctx, env, planHash, why)  GitHub check-run button
//	  │
//	  │ Superseded(ctx, old, newRevision) ──▶ a newer revision (or a changed plan)
//	  │                                       replaced the pending one
//	  │ Started(ctx, proposal, approver) ───▶ (a Starter only) the apply is under way
//	  │ Completed(ctx, proposal, outcome) ──▶ applied (succeeded, failed,
//	  │                                       interrupted) or rejected
//
// The daemon implements Decider; every approval path (the API, the CLI
// through the API, the GitHub check-run Handler) calls it, and nothing else.
// A Decider accepts only the planHash of the plan pending now, for the newest
// revision, and refuses anything else with a *NotPendingError (which matches
// ErrNotPending) naming what is pending now. The outcome of a decision is
// reported once, by the worker, through the Gate's Completed: an approval path
// does not report it itself.
//
// A Gate is told about every plan of its environments; the one configured for
// environments without skipConfirmation decides nothing by itself (Manual, the
// GitHub check-run gate), while Auto approves at once. Gates combines several.
// Gates keep no state: pending plans and the history live in the daemon's
// Store. Propose must be idempotent: a plan whose Propose failed is proposed
// again at every pass, a new process proposes the pending plan it finds once,
// and a plan still pending is proposed again periodically so a gate can repair
// what it shows.
package approval
