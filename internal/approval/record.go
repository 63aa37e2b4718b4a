package approval

import (
	"encoding/json"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// Pending is a plan waiting for approval.
type Pending struct {
	Revision   string          `json:"revision"`
	PlanHash   string          `json:"planHash"`
	Plan       json.RawMessage `json:"plan"`
	ProposedAt time.Time       `json:"proposedAt"`
}

// InFlight is an approved plan whose apply has started and not yet been
// recorded in the history. After a restart the worker continues it without
// asking again, provided the re-planned changes are part of what was approved.
type InFlight struct {
	Revision string          `json:"revision"`
	PlanHash string          `json:"planHash"`
	Approver string          `json:"approver"`
	Changes  json.RawMessage `json:"changes"`
	Started  time.Time       `json:"started"`
}

// Results of an Outcome and of a history Entry.
const (
	ResultSucceeded   = "succeeded"
	ResultFailed      = "failed"
	ResultInterrupted = "interrupted"
	ResultRejected    = "rejected"
	// ResultRolledBack is a failed rollout whose workloads were put back
	// on the images they ran before (environments.<env>.onFailedRollout:
	// rollback); Message says why it failed and how the rollback went.
	ResultRolledBack = "rolled-back"
)

// Entry is one applied (or rejected) plan in an environment's history.
type Entry struct {
	// ID numbers the entries of one environment 1, 2, 3, ... in the order
	// they were recorded; it is never reused (0: recorded before entries
	// were numbered).
	ID       int64           `json:"id,omitempty"`
	Revision string          `json:"revision"`
	PlanHash string          `json:"planHash"`
	Changes  json.RawMessage `json:"changes"`
	Approver string          `json:"approver"`
	// Result is one of succeeded, failed, interrupted, rejected or rolled-back.
	Result string `json:"result"`
	// Message says why a plan failed or was rejected.
	Message string `json:"message,omitempty"`
	// Workloads holds the per-workload results as pkg/reconcile reports them.
	Workloads json.RawMessage `json:"workloads,omitempty"`
	// HistoryRewritten is the last applied revision that Revision did not
	// descend from, when the plan was flagged "history rewritten".
	HistoryRewritten string    `json:"historyRewritten,omitempty"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished"`
	// Manifest is the environment's resolved manifest at Revision: what
	// the entry asked to run (nil for entries recorded before it was kept,
	// or when the revision could not be resolved again).
	Manifest *Manifest `json:"manifest,omitempty"`
	// Verification holds the results of the verification tasks (pipeline.yaml
	// test and evaluation tasks run by pkg/verify) run after the deployment,
	// in order; a failed one ends the list.
	Verification []verify.TaskResult `json:"verification,omitempty"`
}
