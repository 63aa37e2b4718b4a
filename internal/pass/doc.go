// Package pass is what an environment's pass is made of, shared by the daemon's
// worker and the rooms it drives (internal/deploy, internal/release,
// internal/gate): the Pass value its steps read and fill in, the steps'
// names, the typed *Error a step fails with (its Reason is the stage label
// of stagehand_failures_total), the Job of an apply a pass or a decision
// lets through, the Decision on its way to a worker, the roles a pass is
// given (Source, Reconciler, Manifests), the worker's Store that sets the
// pending gauges from every state it sees, and the record helpers every
// step writes with. It runs nothing: the daemon's worker runs the steps.
// It imports no component, and its tests start nothing.
package pass
