package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gh "github.com/google/go-github/v60/github"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// summary of a check run for comparisons.
type run struct {
	Name, HeadSHA, Status, Conclusion, ExternalID string
	Actions                                       []string
}

func runs(srv *githubtest.Server) []run {
	var out []run
	for _, r := range srv.Repo(owner, repo).CheckRuns() {
		var ids []string
		for _, a := range r.Actions {
			ids = append(ids, a.Identifier)
		}
		out = append(out, run{r.Name, r.HeadSHA, r.Status, r.Conclusion, r.ExternalID, ids})
	}
	return out
}

func TestProposeIsIdempotentAndReplacesAChangedPlan(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
	p1 := plan("prod", sha, 2)
	id1, err := f.client.Checks().Propose(ctx, p1)
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	again, err := f.client.Checks().Propose(ctx, p1) // a restart proposes the same plan again
	if err != nil || again != id1 {
		t.Fatalf("Propose again = %d, %v; want the same run %d", again, err, id1)
	}
	p2 := plan("prod", sha, 3) // drift: a different plan for the same commit
	if _, err := f.client.Checks().Propose(ctx, p2); err != nil {
		t.Fatalf("Propose changed plan: %v", err)
	}
	want := []run{
		{"stagehand/prod", sha, "completed", "neutral", p1.PlanHash, nil},
		{"stagehand/prod", sha, "completed", "action_required", p2.PlanHash, []string{"approve", "reject"}},
	}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
	r, _ := f.srv.Repo(owner, repo).CheckRun(id1 + 1)
	for _, s := range []string{"svc-002", "`1.0.0` → `1.0.1`", "`sha256:222222222222`", "maintain", "acme/sre", p2.PlanHash} {
		if !strings.Contains(r.Summary, s) {
			t.Errorf("summary lacks %q:\n%s", s, r.Summary)
		}
	}
	if r.DetailsURL != "https://stagehand.example.com/api/v1/environments/prod" {
		t.Errorf("details_url = %q", r.DetailsURL)
	}
}

func TestSupersedeApplyFinish(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	old := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	newer := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "2"}, "two")
	pOld, pNew := plan("prod", old, 1), plan("prod", newer, 2)
	for _, p := range []*reconcile.Plan{pOld, pNew} {
		if _, err := f.client.Checks().Propose(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.client.Checks().Supersede(ctx, github.PlanRef{Environment: "prod", Revision: old}, newer); err != nil {
		t.Fatalf("Supersede: %v", err)
	}
	if err := f.client.Checks().Applying(ctx, pNew, "maria"); err != nil {
		t.Fatalf("Applying: %v", err)
	}
	if got := f.srv.Repo(owner, repo).CheckRuns()[1]; got.Status != "in_progress" || !strings.Contains(got.Title, "@maria") || len(got.Actions) != 0 {
		t.Errorf("approved run: status %q title %q actions %v", got.Status, got.Title, got.Actions)
	}
	res := &reconcile.Result{Plan: pNew, Workloads: []reconcile.WorkloadResult{
		{WorkloadKey: pNew.Changes[0].Key(), Service: "svc-000", Changes: pNew.Changes[:1], Outcome: reconcile.OutcomeSucceeded, Duration: time.Second},
		{WorkloadKey: pNew.Changes[1].Key(), Service: "svc-001", Changes: pNew.Changes[1:], Outcome: reconcile.OutcomeFailed, Message: "rollout timed out"},
	}}
	if err := f.client.Checks().Finished(ctx, res, "maria", nil); err != nil {
		t.Fatalf("Finished: %v", err)
	}
	want := []run{
		{"stagehand/prod", old, "completed", "neutral", pOld.PlanHash, nil},
		{"stagehand/prod", newer, "completed", "failure", pNew.PlanHash, nil},
	}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
	all := f.srv.Repo(owner, repo).CheckRuns()
	if !strings.Contains(all[0].Title, "Superseded by "+newer[:7]) {
		t.Errorf("superseded title = %q", all[0].Title)
	}
	for _, s := range []string{"Approved by @maria", "svc-000", "succeeded", "rollout timed out"} {
		if !strings.Contains(all[1].Summary, s) {
			t.Errorf("result summary lacks %q:\n%s", s, all[1].Summary)
		}
	}
}

func TestSkipConfirmationGetsACheckRunToo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("devel", sha, 1)
	p.SkipConfirmation = true
	if err := f.client.Checks().Applying(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	res := &reconcile.Result{Plan: p, Workloads: []reconcile.WorkloadResult{{WorkloadKey: p.Changes[0].Key(), Service: "svc-000", Outcome: reconcile.OutcomeSucceeded}}}
	if err := f.client.Checks().Finished(ctx, res, "", nil); err != nil {
		t.Fatal(err)
	}
	want := []run{{"stagehand/devel", sha, "completed", "success", p.PlanHash, nil}}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
}

func TestPlanLargerThanTheSummaryLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("prod", sha, 2000)
	if full := github.RenderPlan(p, "", ""); !strings.Contains(full.Summary, "Cut to fit") {
		t.Fatalf("a 2000-change plan was not cut (len %d)", len(full.Summary))
	}
	id, err := f.client.Checks().Propose(ctx, p) // githubtest rejects a summary over 65,535 characters
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	r, _ := f.srv.Repo(owner, repo).CheckRun(id)
	if n := len([]rune(r.Summary)); n > github.SummaryLimit {
		t.Errorf("summary has %d characters", n)
	}
	if !strings.Contains(r.Summary, "https://stagehand.example.com/api/v1/environments/prod") || !strings.HasSuffix(r.Summary, "**\n") {
		t.Errorf("cut summary does not point to the full plan; ends %q", r.Summary[len(r.Summary)-300:])
	}
}

func TestRetriesOnBadGatewayAndRateLimits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	const create, update = "/repos/{owner}/{repo}/check-runs", "/repos/{owner}/{repo}/check-runs/{check_run_id}"
	f.srv.Faults().Inject(githubtest.Fault{Method: "POST", Route: create, Status: http.StatusInternalServerError})
	f.srv.Faults().Inject(githubtest.Fault{Method: "POST", Route: create, Status: http.StatusBadGateway})
	f.srv.Faults().Inject(githubtest.Fault{Method: "POST", Route: create, Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	f.srv.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: update, Status: http.StatusForbidden, RateLimitReset: time.Now().Add(time.Second)})
	f.srv.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: update, Status: http.StatusServiceUnavailable})
	p := plan("prod", sha, 1)
	if _, err := f.client.Checks().Propose(ctx, p); err != nil {
		t.Fatalf("Propose through 500, 502, 429: %v", err)
	}
	if err := f.client.Checks().Applying(ctx, p, "maria"); err != nil {
		t.Fatalf("Applying through 403 rate limit, 503: %v", err)
	}
	if n := f.srv.Faults().Left(); n != 0 {
		t.Errorf("%d faults not reached", n)
	}
	want := []run{{"stagehand/prod", sha, "in_progress", "", p.PlanHash, nil}}
	if diff := cmp.Diff(want, runs(f.srv)); diff != "" {
		t.Errorf("check runs, nothing lost or doubled (-want +got):\n%s", diff)
	}
	if got := f.srv.CountRequests("POST", create); got != 4 {
		t.Errorf("create requests = %d, want 4 (3 faults + 1)", got)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.client.Collectors()...)
	retries := func(rateLimited, unavailable int) {
		t.Helper()
		want := fmt.Sprintf(`# HELP stagehand_github_retries_total Requests to the GitHub API sent again after a transient answer, by reason: rate_limited (429, or 403 with Retry-After or no requests left) or unavailable (500, 502, 503, 504).
# TYPE stagehand_github_retries_total counter
stagehand_github_retries_total{reason="rate_limited"} %d
stagehand_github_retries_total{reason="unavailable"} %d
`, rateLimited, unavailable)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stagehand_github_retries_total"); err != nil {
			t.Error(err)
		}
	}
	retries(2, 3) // 429 and 403; 500, 502 and 503

	// Bounded: a fault that outlasts the attempts surfaces as an error.
	f.srv.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: update, Status: http.StatusBadGateway, Times: 10})
	err := f.client.Checks().Supersede(ctx, github.PlanRef{Environment: "prod", Revision: sha}, "0123456789")
	if err == nil {
		// the run is in progress, not awaiting: Supersede has nothing to update; use Finished instead
		err = f.client.Checks().Finished(ctx, &reconcile.Result{Plan: p}, "maria", nil)
	}
	if err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("err = %v, want the 502 after the last attempt", err)
	}
	if left := f.srv.Faults().Left(); left != 6 {
		t.Errorf("faults left = %d, want 6 (4 attempts used)", left)
	}
	retries(2, 6) // and 3 retries of the 4 attempts
}

func TestInstallationTokenRefreshAndRootURL(t *testing.T) {
	ctx := context.Background()
	// Tokens living 30s are renewed by internal/ghapp before each use (it renews within a minute of expiry).
	// An apiURL given as the Enterprise host alone (no /api/v3) reaches the API too.
	f := newFixtureWith(t, []githubtest.Option{githubtest.WithTokenTTL(30 * time.Second)})
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	for i := range 3 {
		if _, err := f.client.Checks().Propose(ctx, plan("prod", sha, i+1)); err != nil {
			t.Fatalf("Propose %d: %v", i, err)
		}
	}
	if n := f.srv.App().TokensIssued(); n < 3 {
		t.Errorf("tokens issued = %d, want one per use (at least 3)", n)
	}

	g := newFixture(t, func(c *config.GitHub) { c.APIURL = strings.TrimSuffix(c.APIURL, "/api/v3") })
	sha = g.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	if _, err := g.client.Checks().Propose(ctx, plan("prod", sha, 1)); err != nil {
		t.Fatalf("Propose against the root URL: %v", err)
	}
}

// TestProposeKeepsAnApprovedRun: a run someone approved (the click moved it to in progress while the
// decision or the apply runs) is not duplicated when the daemon proposes the still-pending plan again
// (after a restart, or a pass after a failed Propose).
func TestProposeKeepsAnApprovedRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
	p1 := plan("prod", sha, 1)
	id1, err := f.client.Checks().Propose(ctx, p1)
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	// Approved (the click moved it to in progress) while the daemon proposes again after a restart: kept.
	rest, err := gh.NewClient(f.srv.Client()).WithAuthToken(f.srv.Token()).WithEnterpriseURLs(f.srv.URL(), f.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rest.Checks.UpdateCheckRun(ctx, owner, repo, id1, gh.UpdateCheckRunOptions{Name: "stagehand/prod", Status: gh.String("in_progress")}); err != nil {
		t.Fatal(err)
	}
	if again, err := f.client.Checks().Propose(ctx, p1); err != nil || again != id1 || len(f.srv.Repo(owner, repo).CheckRuns()) != 1 {
		t.Fatalf("Propose while approved = %d, %v, %d runs; want the same run %d and no other", again, err, len(f.srv.Repo(owner, repo).CheckRuns()), id1)
	}
	if r, _ := f.srv.Repo(owner, repo).CheckRun(id1); r.Status != "in_progress" {
		t.Errorf("a fresh click: run %s, want kept in progress", r.Status)
	}

	// The click is older than DefaultLostClickAfter and the plan is still pending (the daemon proposes only
	// pending plans): the replica that took it stopped before the leader heard of it. The run gets its plan
	// and buttons back.
	markClicked(t, f.srv, id1, time.Now().Add(-github.DefaultLostClickAfter-time.Minute), "Approved by @maria, applying")
	if again, err := f.client.Checks().Propose(ctx, p1); err != nil || again != id1 || len(f.srv.Repo(owner, repo).CheckRuns()) != 1 {
		t.Fatalf("Propose after a lost click = %d, %v, %d runs; want the same run %d and no other", again, err, len(f.srv.Repo(owner, repo).CheckRuns()), id1)
	}
	if diff := cmp.Diff([]run{{"stagehand/prod", sha, "completed", "action_required", p1.PlanHash, []string{"approve", "reject"}}}, runs(f.srv)); diff != "" {
		t.Errorf("after a lost click (-want +got):\n%s", diff)
	}
	r, _ := f.srv.Repo(owner, repo).CheckRun(id1)
	for _, want := range []string{"Lost: “Approved by @maria, applying”", "decide again", "**Awaiting approval.**", p1.PlanHash} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.Summary)
		}
	}
}

// markClicked does to run id what the Handler does on a click: in progress since at, titled title.
func markClicked(t *testing.T, srv *githubtest.Server, id int64, at time.Time, title string) {
	t.Helper()
	patchRun(t, srv, id, map[string]any{"status": "in_progress", "started_at": at.UTC().Format(time.RFC3339), "actions": []any{},
		"output": map[string]string{"title": title, "summary": title + "."}})
}

// patchRun sends an update of check run id through the REST API.
func patchRun(t *testing.T, srv *githubtest.Server, id int64, body map[string]any) {
	t.Helper()
	rest, err := gh.NewClient(srv.Client()).WithAuthToken(srv.Token()).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	req, err := rest.NewRequest(http.MethodPatch, "repos/"+owner+"/"+repo+"/check-runs/"+strconv.FormatInt(id, 10), body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rest.Do(context.Background(), req, nil); err != nil {
		t.Fatalf("updating run %d: %v", id, err)
	}
}

// TestGateProposeRateLimited: a Propose that GitHub refuses for its rate
// limit beyond what the retries wait says until when, as an
// *approval.RateLimitedError the daemon names in the environment's status.
func TestGateProposeRateLimited(t *testing.T) {
	ctx := context.Background()
	const runs = "/repos/{owner}/{repo}/commits/{ref}/check-runs"
	for _, tc := range []struct {
		name  string
		fault githubtest.Fault
		until time.Time
	}{
		{"primary", githubtest.Fault{Method: "GET", Route: runs, Status: http.StatusForbidden, RateLimitReset: time.Now().Add(time.Hour).Truncate(time.Second)},
			time.Now().Add(time.Hour).Truncate(time.Second)},
		{"secondary", githubtest.Fault{Method: "GET", Route: runs, Status: http.StatusTooManyRequests, RetryAfter: 10 * time.Minute},
			time.Now().Add(10 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
			f.srv.Faults().Inject(tc.fault)
			_, err := github.NewGate(f.client).Propose(ctx, approval.Proposal{Environment: "prod", Revision: sha, Plan: plan("prod", sha, 1)})
			var rl *approval.RateLimitedError
			if !errors.As(err, &rl) {
				t.Fatalf("Propose: %v, want an *approval.RateLimitedError", err)
			}
			if d := rl.Until.Sub(tc.until); rl.Service != "GitHub" || d < -5*time.Second || d > 5*time.Second {
				t.Errorf("rate limited: %s until %v, want GitHub until about %v", rl.Service, rl.Until, tc.until)
			}
			if got := f.srv.CountRequests("GET", runs); got != 1 {
				t.Errorf("%d requests, want 1: a wait beyond the retry policy's is not waited", got)
			}
		})
	}
}
