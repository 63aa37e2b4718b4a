package github_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestCompletedRolledBack: an apply whose rollout failed and was rolled back
// (onFailedRollout: rollback) completes its check run as a failure that says
// so, with the failed workloads in the table.
func TestCompletedRolledBack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "rolled back"}, "bump")
	p := plan("devel", sha, 1)
	g := github.NewGate(f.client)
	prop := approval.Proposal{Environment: "devel", Revision: sha, Plan: p}
	if _, err := g.Propose(ctx, prop); err != nil {
		t.Fatal(err)
	}
	msg := "rollout failed: 1 workload(s) not deployed: svc-000 failed: progress deadline exceeded; rolled back 1 workload(s) to the images before"
	o := approval.Outcome{Result: approval.ResultRolledBack, Approver: approval.AutoApprover, Message: msg, Started: time.Now(), Finished: time.Now(),
		Apply: &reconcile.Result{Plan: p, Workloads: []reconcile.WorkloadResult{{WorkloadKey: p.Changes[0].Key(), Service: "svc-000",
			Changes: p.Changes, Outcome: reconcile.OutcomeFailed, Message: "progress deadline exceeded"}}}}
	if err := g.Completed(ctx, prop, o); err != nil {
		t.Fatal(err)
	}
	want := []run{{"stagehand/devel", sha, "completed", "failure", p.PlanHash, nil}}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
	r := f.srv.Repo(owner, repo).CheckRuns()[0]
	for _, s := range []string{"rolled back 1 workload(s) to the images before", "progress deadline exceeded"} {
		if !strings.Contains(r.Summary, s) {
			t.Errorf("summary lacks %q:\n%s", s, r.Summary)
		}
	}
}
