// Package deploy carries out an apply a pass or a decision let through
// (Applier): the in-flight record written before the first patch, the
// patches under pkg/reconcile's lock re-checks and the rollouts (ApplyStep),
// the deployment task's result and the sequence's tasks after it
// (VerifyStep), the wait for a release approval (ReleaseStep, through
// internal/release), and the history entry, the gate's outcome or the
// rollback of a failed apply through internal/revert (RecordStep); and the
// record of an apply whose patches all landed before its process ended
// (RecordLanded). The daemon's worker builds one Applier per environment
// and gives it what it uses (Config); it imports no component, and its
// tests start nothing.
package deploy
