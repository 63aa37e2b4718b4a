package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

func TestApprovalClicks(t *testing.T) {
	tests := []struct {
		name       string
		sender     string
		action     string
		staleHash  bool
		wantRun    run
		wantDecide []string // approved or rejected entries
		wantInSum  string
	}{
		{name: "maintainer approves", sender: "maria", action: "approve",
			wantRun: run{Status: "in_progress"}, wantDecide: []string{"approved prod HASH github:maria"}, wantInSum: "maintain on acme/manifests"},
		{name: "team member approves", sender: "sam", action: "approve",
			wantRun: run{Status: "in_progress"}, wantDecide: []string{"approved prod HASH github:sam"}, wantInSum: "member of acme/sre"},
		{name: "admin rejects", sender: "acme", action: "reject",
			wantRun: run{Status: "completed", Conclusion: "cancelled"}, wantDecide: []string{"rejected prod HASH github:acme"}, wantInSum: "Rejected by @acme"},
		{name: "writer may not approve", sender: "wendy", action: "approve",
			wantRun: run{Status: "completed", Conclusion: "action_required", Actions: []string{"approve", "reject"}}, wantInSum: "@wendy may not approve or reject this plan: @wendy has write on acme/manifests; approving prod needs maintain"},
		{name: "stranger may not reject", sender: "eve", action: "reject",
			wantRun: run{Status: "completed", Conclusion: "action_required", Actions: []string{"approve", "reject"}}, wantInSum: "@eve has no access"},
		{name: "a login named like Stagehand itself, though an admin", sender: "stagehand", action: "approve",
			wantRun: run{Status: "completed", Conclusion: "action_required", Actions: []string{"approve", "reject"}}, wantInSum: "Stagehand uses the names"},
		{name: "stale hash", sender: "maria", action: "approve", staleHash: true,
			wantRun: run{Status: "completed", Conclusion: "neutral"}, wantInSum: "This plan was not applied: plan is not pending"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			f.srv.Repo(owner, repo).SetPermission("maria", "maintain")
			f.srv.Repo(owner, repo).SetPermission("wendy", "write")
			f.srv.Repo(owner, repo).SetPermission("stagehand", "admin")
			f.srv.AddTeamMember("acme", "sre", "sam")
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
			p := plan("prod", sha, 2)
			id, err := f.client.Checks().Propose(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			d := newDecider()
			d.gate = github.NewGate(f.client)
			d.setPlan(p)
			if tc.staleHash {
				d.set("prod", "sha256:somethingelse")
			}
			h := newHandler(t, f.client, d, nil)
			delivery := f.srv.Webhooks(owner, repo).CheckRunAction(id, tc.action, tc.sender)
			if err := h.HandleCheckRun(ctx, delivery.Body); err != nil {
				t.Fatalf("HandleCheckRun: %v", err)
			}
			h.Wait() // the decision runs after the webhook is answered
			var decided []string
			for _, a := range d.approved {
				decided = append(decided, "approved "+a)
			}
			for _, r := range d.rejected {
				decided = append(decided, "rejected "+r)
			}
			want := strings.ReplaceAll(strings.Join(tc.wantDecide, ","), "HASH", p.PlanHash)
			if got := strings.Join(decided, ","); got != want {
				t.Errorf("decisions = %q, want %q", got, want)
			}
			tc.wantRun.Name, tc.wantRun.HeadSHA, tc.wantRun.ExternalID = "stagehand/prod", sha, p.PlanHash
			if diff := cmp.Diff([]run{tc.wantRun}, runs(f.srv)); diff != "" {
				t.Errorf("check run (-want +got):\n%s", diff)
			}
			if got := f.srv.Repo(owner, repo).CheckRuns()[0].Summary; !strings.Contains(got, tc.wantInSum) {
				t.Errorf("summary lacks %q:\n%s", tc.wantInSum, got)
			}
		})
	}
}

func TestUnauthorisedClickTwiceKeepsOneNote(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("prod", sha, 1)
	id, err := f.client.Checks().Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, f.client, newDecider(), nil)
	for _, who := range []string{"eve", "mallory"} {
		if err := h.HandleCheckRun(ctx, f.srv.Webhooks(owner, repo).CheckRunAction(id, "approve", who).Body); err != nil {
			t.Fatal(err)
		}
	}
	s := f.srv.Repo(owner, repo).CheckRuns()[0].Summary
	if strings.Count(s, "may not approve") != 1 || !strings.Contains(s, "@mallory") || !strings.Contains(s, "svc-000") {
		t.Errorf("summary after two unauthorised clicks:\n%s", s)
	}
}

func TestIgnoredDeliveries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	other := f.srv.Repo(owner, repo).AddCheckRun(githubtestRun("ci/build", sha))
	preview := f.srv.Repo(owner, repo).AddCheckRun(githubtestRun("stagehand/prod preview", sha))
	d := newDecider()
	h := newHandler(t, f.client, d, nil)
	for _, id := range []int64{other, preview} {
		if err := h.HandleCheckRun(ctx, f.srv.Webhooks(owner, repo).CheckRunAction(id, "approve", "acme").Body); err != nil {
			t.Errorf("HandleCheckRun: %v", err)
		}
	}
	// A run named like ours but made by another GitHub App.
	p := plan("prod", sha, 1)
	id, err := f.client.Checks().Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	d.set("prod", p.PlanHash)
	var ev map[string]any
	if err := json.Unmarshal(f.srv.Webhooks(owner, repo).CheckRunAction(id, "approve", "acme").Body, &ev); err != nil {
		t.Fatal(err)
	}
	ev["check_run"].(map[string]any)["app"].(map[string]any)["id"] = 999
	body, _ := json.Marshal(ev)
	if err := h.HandleCheckRun(ctx, body); err != nil {
		t.Errorf("HandleCheckRun: %v", err)
	}
	if len(d.approved) != 0 {
		t.Errorf("approved %v from runs that are not our approval runs", d.approved)
	}
	if err := h.HandleCheckRun(ctx, []byte("{")); err == nil {
		t.Error("a malformed payload was accepted")
	}
}

type previewer map[string]error

func (p previewer) Preview(_ context.Context, _, rev string) ([]github.Preview, error) {
	var out []github.Preview
	for _, env := range []string{"devel", "prod"} {
		out = append(out, github.Preview{Environment: env, Plan: plan(env, rev, 1), Err: p[env]})
	}
	return out, nil
}

func TestPullRequestPreview(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.srv.Repo(owner, repo).Commit("bump", map[string]string{"environments/prod/api.json": "{}"}, "bump api")
	n := f.srv.Repo(owner, repo).OpenPullRequest("bump", "main", "Bump api", "maria")
	h := newHandler(t, f.client, newDecider(), previewer{"devel": errors.New("environments/devel/manifest.json:3:5: unknown key")})
	for _, action := range []string{"opened", "synchronize", "closed"} {
		if err := h.HandlePullRequest(ctx, f.srv.Webhooks(owner, repo).PullRequest(n, action, "maria").Body); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		h.Wait() // the preview is computed after the webhook was answered
	}
	head := f.srv.Repo(owner, repo).Branch("bump")
	want := []run{
		{"stagehand/devel preview", head, "completed", "neutral", plan("devel", head, 1).PlanHash, nil},
		{"stagehand/prod preview", head, "completed", "neutral", plan("prod", head, 1).PlanHash, nil},
	}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("preview runs, one per environment, updated in place (-want +got):\n%s", diff)
	}
	all := f.srv.Repo(owner, repo).CheckRuns()
	if !strings.Contains(all[0].Title, "unknown key") || !strings.Contains(all[1].Summary, "Merging this pull request") {
		t.Errorf("previews: %q / %q", all[0].Title, all[1].Summary)
	}
}

// slowDecider blocks every decision until release delivers its answer.
type slowDecider struct {
	started chan string
	release chan error
}

func (d slowDecider) Approve(ctx context.Context, env, _ string, who identity.Principal) (*approval.Pending, error) {
	d.started <- "approve " + env + " " + who.String()
	return nil, <-d.release
}

func (d slowDecider) Reject(ctx context.Context, env, _ string, why approval.Why) (*approval.Pending, error) {
	who := why.By
	d.started <- "reject " + env + " " + who.String()
	return nil, <-d.release
}

// TestClickAnsweredBeforeTheDecision: the webhook is answered as soon as the sender's permission is checked
// and the run shows it in progress; the decision (ls-remote, re-plan: longer than GitHub's 10 s webhook
// timeout at worst) runs after, and its failure lands on the run with the buttons back.
func TestClickAnsweredBeforeTheDecision(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.srv.Repo(owner, repo).SetPermission("maria", "maintain")
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("prod", sha, 1)
	id, err := f.client.Checks().Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// Proposed an hour ago: the click, not the proposal, starts the run's time in progress (a run in
	// progress long after its click lost it; see Client.Propose).
	patchRun(t, f.srv, id, map[string]any{"started_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
	d := slowDecider{started: make(chan string, 1), release: make(chan error)}
	var unshown []error
	h := newHandler(t, f.client, d, nil, github.OnDecisionError(func(err error) { unshown = append(unshown, err) }))
	if err := h.HandleCheckRun(ctx, f.srv.Webhooks(owner, repo).CheckRunAction(id, "approve", "maria").Body); err != nil {
		t.Fatalf("HandleCheckRun: %v", err)
	}
	// HandleCheckRun returned while the decider has not answered.
	if got := <-d.started; got != "approve prod github:maria" {
		t.Errorf("decision %q", got)
	}
	r, _ := f.srv.Repo(owner, repo).CheckRun(id)
	if r.Status != "in_progress" || !strings.Contains(r.Title, "Approved by @maria") || len(r.Actions) != 0 {
		t.Errorf("run while deciding: %s %q actions %v", r.Status, r.Title, r.Actions)
	}
	if time.Since(r.StartedAt) > time.Minute {
		t.Errorf("run in progress since %s, want since the click", r.StartedAt)
	}
	d.release <- errors.New("planning revision abc: registry unreachable")
	h.Wait()
	r, _ = f.srv.Repo(owner, repo).CheckRun(id)
	if r.Conclusion != "action_required" || len(r.Actions) != 2 ||
		!strings.Contains(r.Summary, "Approving failed, nothing was applied: planning revision abc: registry unreachable") {
		t.Errorf("run after a failed approval: %s/%s actions %v\n%s", r.Status, r.Conclusion, r.Actions, r.Summary)
	}
	if len(unshown) != 1 || !strings.Contains(unshown[0].Error(), "registry unreachable") {
		t.Errorf("errors reported to the binary: %v", unshown)
	}
}

// TestNewHandlerChecksTimeouts: a decision may not outlast the delay after which its click counts as lost.
func TestNewHandlerChecksTimeouts(t *testing.T) {
	f := newFixture(t)
	if _, err := github.NewHandler(f.client, newDecider(), "main", github.WithDecisionTimeout(time.Hour)); err == nil ||
		!strings.Contains(err.Error(), "must be shorter than the client's lost-click delay") {
		t.Errorf("NewHandler with a 1h decision timeout = %v, want refused (lost click after %s)", err, github.DefaultLostClickAfter)
	}
	if _, err := github.NewHandler(f.client, newDecider(), "main", github.WithDecisionTimeout(0)); err == nil {
		t.Error("NewHandler accepted a zero decision timeout")
	}
}
