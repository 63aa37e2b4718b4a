package reconcile

import (
	"errors"
	"fmt"
	"time"
)

// ErrStalePlan is matched (errors.Is) by a *StalePlanError.
var ErrStalePlan = errors.New("plan no longer matches")

// StalePlanError refuses an apply: planning again gave a different planHash
// than the approved one.
type StalePlanError struct {
	Want, Got string
	// Plan is the fresh plan.
	Plan *Plan
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("refusing to apply: the plan no longer matches: approved planHash %s, the cluster and manifests now give %s", e.Want, e.Got)
}

// Is makes errors.Is(err, ErrStalePlan) true.
func (e *StalePlanError) Is(target error) bool { return target == ErrStalePlan }

// Outcome is what happened to one workload during an apply.
type Outcome string

// Outcomes of WorkloadResult.
const (
	// OutcomeSucceeded: patched and rolled out (or, for a CronJob, patched).
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeFailed: the patch failed, or the rollout failed or timed out.
	OutcomeFailed Outcome = "failed"
	// OutcomeBlocked: a deploy lock appeared before the patch; nothing was sent.
	OutcomeBlocked Outcome = "blocked"
	// OutcomePatched: patched, rollout not waited for (rollout timeout zero).
	OutcomePatched Outcome = "patched"
	// OutcomeOnDelete: patched, but the workload's updateStrategy is OnDelete
	// (a StatefulSet or DaemonSet): its pods change when deleted, and when the
	// controller had observed the patch not all of them ran the new revision.
	OutcomeOnDelete Outcome = "patched-on-delete"
)

// Applied reports whether the workload's patch went through: succeeded,
// patched without waiting, or patched under OnDelete.
func (o Outcome) Applied() bool {
	return o == OutcomeSucceeded || o == OutcomePatched || o == OutcomeOnDelete
}

// WorkloadResult is one workload's outcome.
type WorkloadResult struct {
	WorkloadKey
	Service  string        `json:"service"`
	Changes  []Change      `json:"changes"`
	Outcome  Outcome       `json:"outcome"`
	Message  string        `json:"message,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Result is the outcome of an apply.
type Result struct {
	Plan      *Plan            `json:"plan"`
	Workloads []WorkloadResult `json:"workloads"`
}

// Failed reports whether any workload failed or was blocked.
func (r *Result) Failed() bool {
	for _, w := range r.Workloads {
		if w.Outcome == OutcomeFailed || w.Outcome == OutcomeBlocked {
			return true
		}
	}
	return false
}

// Phase is a step of one workload's apply, reported through WithProgress.
type Phase string

// Phases reported by WithProgress. Every workload ends in exactly one of
// PhaseSucceeded, PhaseFailed, PhaseBlocked, PhaseOnDelete (updateStrategy
// OnDelete) or (no waiting) PhasePatched;
// between PhasePatched and the end, PhaseRollingOut reports each new status
// of its rollout ("1 of 3 replicas updated").
const (
	PhasePatched    Phase = "patched"
	PhaseRollingOut Phase = "rolling out"
	PhaseSucceeded  Phase = "succeeded"
	PhaseFailed     Phase = "failed"
	PhaseBlocked    Phase = "blocked"
	PhaseOnDelete   Phase = "patched, pods change when deleted"
)

// Progress is one step of one workload.
type Progress struct {
	WorkloadKey
	Service string
	Phase   Phase
	Message string
}
