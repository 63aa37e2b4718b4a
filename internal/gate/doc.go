// Package gate is the gate step of an environment's passes (Keeper.GateStep):
// from the environment's phase and the plan the pass made it decides what
// the plan calls for — keep waiting for a release approval (internal/release),
// keep a pending plan at a newer revision that changes nothing here, keep a
// plan the deploy windows defer (internal/window) or let it through a
// break-glass, settle an environment in sync, continue an interrupted apply
// without asking again, or propose the plan to the approval gate, an
// auto-approved one (skipConfirmation) going on to the apply
// (internal/deploy). It withdraws a pending plan a newer revision
// supersedes (Keeper.Supersede), and says whether the last pass kept a
// pending plan (Keeper.Keeps), for a decision on it. The daemon's worker
// builds one Keeper per environment and gives it what it reads and tells
// (Config); it imports no component, and its tests start nothing.
package gate
