// Package decision takes the decisions on an environment's pending plan in
// its worker (Desk): an approval or rejection this replica's daemon sends
// (Decide: the plan still pending and its revision still the newest, asking
// the remote; a rejection recorded; an approval counted under the policy,
// deferred by closed deploy windows or let through a break-glass, and
// applied by the worker's steps from apply on, over a pass of its own; a
// plan changed since it was proposed proposed afresh and the decision
// refused), or one handed over by another replica through the state's
// queue (PickUp: rejections first, at most MaxHandovers waiting; handover.go).
// A release approval is internal/release's to carry out. The daemon's worker
// builds one Desk per environment and gives it what it uses (Config); it
// imports no component, and its tests start nothing.
package decision
