package revert

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestOutcome: the gate hears the rolled-back entry's plan and the
// failed apply's workload results; results that do not decode are an error
// the worker logs, not silently an apply without workloads.
func TestOutcome(t *testing.T) {
	changes := []reconcile.Change{{Service: "web", Container: "web", From: "1.0.0", To: "2.0.0"}}
	workloads := []reconcile.WorkloadResult{{WorkloadKey: reconcile.WorkloadKey{Target: "local", Namespace: "apps", Kind: "Deployment", Name: "web"},
		Service: "web", Outcome: reconcile.OutcomeFailed, Message: "progress deadline exceeded"}}
	encoded, err := json.Marshal(workloads)
	if err != nil {
		t.Fatal(err)
	}
	e := approval.Entry{Revision: "abc123", PlanHash: "h1", Approver: "alice", Result: approval.ResultRolledBack, Message: "rolled back", Workloads: encoded}

	prop, out, err := outcome("devel", e, changes)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := &reconcile.Plan{Environment: "devel", Revision: "abc123", PlanHash: "h1", Changes: changes}
	if diff := cmp.Diff(wantPlan, prop.Plan); diff != "" || prop.Environment != "devel" || prop.Revision != "abc123" {
		t.Errorf("proposal %s %s, plan (-want +got):\n%s", prop.Environment, prop.Revision, diff)
	}
	if diff := cmp.Diff(workloads, out.Apply.Workloads); diff != "" || out.Result != approval.ResultRolledBack || out.Approver != "alice" {
		t.Errorf("outcome %s by %s, workloads (-want +got):\n%s", out.Result, out.Approver, diff)
	}

	e.Workloads = json.RawMessage(`{"not": "a list"}`)
	_, out, err = outcome("devel", e, changes)
	if err == nil {
		t.Error("undecodable workload results: no error")
	}
	if out.Result != approval.ResultRolledBack || out.Apply == nil || out.Apply.Workloads != nil || len(out.Apply.Plan.Changes) != 1 {
		t.Errorf("outcome with undecodable workloads = %+v, want the rolled-back plan without workloads", out)
	}
}
