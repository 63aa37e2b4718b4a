package github_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestCompletedConcludesWithTheSequence: the check run completes with the
// result of the whole delivery sequence, which is what prbot's
// requires.healthy reads: success on pass, neutral on warning, and failure
// when a task after a good rollout failed (the workloads all succeeded).
func TestCompletedConcludesWithTheSequence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome approval.Outcome
		want    string
		summary string
		result  string // promote.CheckResult of the run: what prbot reads
	}{
		{"pass", approval.Outcome{Result: approval.ResultSucceeded, Sequence: promote.ResultPass}, "success", "", promote.ResultPass},
		{"warning", approval.Outcome{Result: approval.ResultSucceeded, Sequence: promote.ResultWarning, Message: "task test finished with warning: slow"}, "neutral",
			"task test finished with warning: slow", promote.ResultWarning},
		{"task failed", approval.Outcome{Result: approval.ResultFailed, Sequence: promote.ResultFail, Message: "task test finished with fail: 2 of 3 requests answered 503"},
			"failure", "2 of 3 requests answered 503", promote.ResultFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": tc.name}, "bump")
			p := plan("devel", sha, 1)
			g := github.NewGate(f.client)
			prop := approval.Proposal{Environment: "devel", Revision: sha, Plan: p}
			if _, err := g.Propose(ctx, prop); err != nil {
				t.Fatal(err)
			}
			o := tc.outcome
			o.Approver, o.Started, o.Finished = "maria", time.Now(), time.Now()
			o.Apply = &reconcile.Result{Plan: p, Workloads: []reconcile.WorkloadResult{
				{WorkloadKey: p.Changes[0].Key(), Service: "svc-000", Changes: p.Changes, Outcome: reconcile.OutcomeSucceeded}}}
			if err := g.Completed(ctx, prop, o); err != nil {
				t.Fatal(err)
			}
			want := []run{{"stagehand/devel", sha, "completed", tc.want, p.PlanHash, nil}}
			if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
				t.Errorf("check runs (-want +got):\n%s", diff)
			}
			r := f.srv.Repo(owner, repo).CheckRuns()[0]
			if !strings.Contains(r.Summary, tc.summary) {
				t.Errorf("summary lacks %q:\n%s", tc.summary, r.Summary)
			}
			if got := promote.CheckResult(r.Conclusion, r.Title); got != tc.result {
				t.Errorf("run %q (%s) reads as result %q, want %q", r.Title, r.Conclusion, got, tc.result)
			}
		})
	}
}
