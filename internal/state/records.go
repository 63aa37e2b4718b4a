package state

import (
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// The records below are kept in an environment's state beside the pending
// plan and the in-flight apply; the daemon decides what goes in them.

// Unreported is an outcome the gate has not taken yet.
type Unreported struct {
	// ID tells this report from one kept for the same plan since.
	ID string `json:"id"`
	// Kind is "completed" (Outcome is set) or "superseded" (By is set).
	Kind     string            `json:"kind"`
	Proposal approval.Proposal `json:"proposal"`
	Outcome  *approval.Outcome `json:"outcome,omitempty"`
	By       string            `json:"by,omitempty"`
	// Attempts counts the reports that failed, the first included.
	Attempts int `json:"attempts"`
	// LastError is the gate's last refusal.
	LastError string `json:"lastError,omitempty"`
}

// PlanHash is the hash of the plan u is about, "" when it has none.
func (u Unreported) PlanHash() string {
	if u.Proposal.Plan == nil {
		return ""
	}
	return u.Proposal.Plan.PlanHash
}

// Rollback is an apply being undone: recorded in the state, in the same
// write that ends its apply, before the first restoring patch, and cleared
// with its history entry; a worker that finds one (a restart, the other
// replica taking over) continues it before anything else. Restoring patches
// only containers that still run the image the apply set, so continuing
// never patches a workload twice.
type Rollback struct {
	// Entry is the history entry of the apply as it would be recorded
	// without the rollback (its revision, plan, changes, approver, times,
	// workloads and manifest); its changes' From are the images restored.
	Entry approval.Entry `json:"entry"`
	// Cause says why: the rollout that failed (or the verification).
	Cause string `json:"cause"`
	// Before is the revision the restored images were applied from (the
	// last applied before it; "" when none is known).
	Before string    `json:"before,omitempty"`
	At     time.Time `json:"at"`
}

// Same reports whether a and b are one decision: by ID when both have one,
// else (one written by an older replica) by every field.
func (a Handover) Same(b Handover) bool {
	if a.ID != "" && b.ID != "" {
		return a.ID == b.ID
	}
	return a.Approve == b.Approve && a.PlanHash == b.PlanHash && a.Approver == b.Approver && a.ActsFor == b.ActsFor &&
		a.Reason == b.Reason && a.At.Equal(b.At)
}

// legacyHandover is what the single slot of older replicas holds: the
// newest decision of the queue.
func legacyHandover(q []Handover) *Handover {
	if len(q) == 0 {
		return nil
	}
	h := q[len(q)-1]
	return &h
}

// withLegacy is the queue q with the decision of the older replicas' slot
// appended, unless it is q's own (the newest, mirrored there).
func withLegacy(q []Handover, legacy *Handover) []Handover {
	if legacy == nil {
		return q
	}
	for _, h := range q {
		if h.Same(*legacy) {
			return q
		}
	}
	return append(q, *legacy)
}
