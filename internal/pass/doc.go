// Package pass is what an environment's pass is made of, shared by the
// daemon's worker and the rooms that hold its steps and decisions
// (internal/gate, internal/deploy, internal/release, internal/decision):
// the Pass value the steps read and fill in, the steps' names, the typed
// error a step fails with (Failed; ReasonOf is the stage label of
// stagehand_failures_total it is counted under), the Job of an apply a pass
// or a decision lets through, the Decision on its way to a worker, the roles
// a pass is given (Source, Reconciler, Manifests), what the rooms ask of the
// worker's passes (Runner), the worker's Store that sets the pending gauges
// from every state it sees, and the records every step writes with. It runs
// nothing: the daemon's worker runs the steps. It imports no component, and
// its tests start nothing.
package pass
