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
)

// TestProposeRelease: a plan applied and verified waiting for its release
// approval gets its own check run (the plan's, by planHash) back awaiting a
// decision with both release buttons, stamped as the release's decision
// (external_id release:<planHash>), saying so; proposing it again changes
// nothing; the tally of a two-approver policy keeps saying it is a release;
// the release completes the same run. In a skipConfirmation environment,
// where no run was made before the apply, it is created.
func TestProposeRelease(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	g := github.NewGate(f.client)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "bump")
	p := plan("prod", sha, 1)
	prop := approval.Proposal{Environment: "prod", Revision: sha, Plan: p}
	if _, err := g.Propose(ctx, prop); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Checks().Applying(ctx, p, "maria"); err != nil { // approved: in progress, no buttons
		t.Fatal(err)
	}
	release := prop
	release.Release = time.Now()
	for range 2 {
		if _, err := g.Propose(ctx, release); err != nil {
			t.Fatal(err)
		}
	}
	want := []run{{"stagehand/prod", sha, "completed", "action_required", github.ReleaseExternalID(p.PlanHash), []string{"release-approve", "release-reject"}}}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
	r := f.srv.Repo(owner, repo).CheckRuns()[0]
	if r.Title != "Deployed; awaiting release approval" || !strings.Contains(r.Summary, "*Approve* releases it") || r.Updates != 2 {
		t.Errorf("run %q (%d updates):\n%s\nwant the release approval asked once", r.Title, r.Updates, r.Summary)
	}
	if err := g.Tally(ctx, release, []string{"alice"}, 2); err != nil {
		t.Fatal(err)
	}
	if r := f.srv.Repo(owner, repo).CheckRuns()[0]; !strings.HasPrefix(r.Title, "Deployed; awaiting release approval: ") || !strings.Contains(r.Summary, "*Approve* releases it") {
		t.Errorf("tallied run %q:\n%s\nwant it still asking for the release", r.Title, r.Summary)
	}
	o := approval.Outcome{Result: approval.ResultSucceeded, Sequence: promote.ResultPass, Approver: "maria", Started: time.Now(), Finished: time.Now()}
	if err := g.Completed(ctx, prop, o); err != nil {
		t.Fatal(err)
	}
	want = []run{{"stagehand/prod", sha, "completed", "success", github.ReleaseExternalID(p.PlanHash), nil}}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs after the release (-want +got):\n%s", diff)
	}

	sha2 := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "2"}, "bump")
	p2 := plan("devel", sha2, 1)
	if _, err := g.Propose(ctx, approval.Proposal{Environment: "devel", Revision: sha2, Plan: p2, Release: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var got []run
	for _, r := range runs(f.srv) {
		if r.HeadSHA == sha2 {
			got = append(got, r)
		}
	}
	want = []run{{"stagehand/devel", sha2, "completed", "action_required", github.ReleaseExternalID(p2.PlanHash), []string{"release-approve", "release-reject"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skipConfirmation environment's release run (-want +got):\n%s", diff)
	}
}
