package githubtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

func newClient(t *testing.T, srv *githubtest.Server) *github.Client {
	t.Helper()
	c, err := github.NewClient(srv.Client()).WithAuthToken(srv.Token()).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckRunLifecycle(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	sha := srv.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/a.json": "{}"}, "change")
	gh := newClient(t, srv)

	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "manifests", github.CreateCheckRunOptions{
		Name: "stagehand/prod", HeadSHA: sha, ExternalID: github.String("hash1"),
		Conclusion: github.String("action_required"),
		Output:     &github.CheckRunOutput{Title: github.String("1 change"), Summary: github.String("plan")},
		Actions:    []*github.CheckRunAction{{Label: "Approve", Description: "Deploy this plan", Identifier: "approve"}},
	})
	if err != nil {
		t.Fatalf("CreateCheckRun: %v", err)
	}
	if got := cr.GetStatus(); got != "completed" {
		t.Errorf("status = %q, want completed (a conclusion completes the run)", got)
	}
	_, _, err = gh.Checks.UpdateCheckRun(ctx, "acme", "manifests", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "stagehand/prod", Status: github.String("in_progress"),
	})
	if err != nil {
		t.Fatalf("UpdateCheckRun: %v", err)
	}
	got, ok := srv.Repo("acme", "manifests").CheckRun(cr.GetID())
	if !ok || got.Status != "in_progress" || got.Conclusion != "" || got.ExternalID != "hash1" {
		t.Errorf("after update: %+v", got)
	}
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "manifests", "main", &github.ListCheckRunsOptions{CheckName: github.String("stagehand/prod")})
	if err != nil {
		t.Fatalf("ListCheckRunsForRef: %v", err)
	}
	if list.GetTotal() != 1 || list.CheckRuns[0].GetID() != cr.GetID() {
		t.Errorf("list = %d runs, want the one created", list.GetTotal())
	}
}

func TestInvalidRequestIsAViolation(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	sha := srv.Repo("acme", "manifests").Branch("main")
	gh := newClient(t, srv)
	_, resp, err := gh.Checks.CreateCheckRun(ctx, "acme", "manifests", github.CreateCheckRunOptions{
		Name: "x", HeadSHA: sha,
		Actions: []*github.CheckRunAction{{Label: "A label far longer than twenty", Description: "d", Identifier: "i"}},
	})
	if err == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("err = %v, want 422", err)
	}
	v := srv.TakeViolations()
	if len(v) != 1 || !strings.Contains(v[0], "label") {
		t.Errorf("violations = %q, want one naming the label", v)
	}
}

func TestContentsRefsPullsMerge(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	base := srv.Repo("acme", "manifests").Commit("main", map[string]string{"environments/devel/api.json": "v1\n", "other.json": "o\n"}, "seed")
	gh := newClient(t, srv)

	if _, _, err := gh.Git.CreateRef(ctx, "acme", "manifests", &github.Reference{Ref: github.String("refs/heads/bump/api"), Object: &github.GitObject{SHA: github.String(base)}}); err != nil {
		t.Fatalf("CreateRef: %v", err)
	}
	fc, _, _, err := gh.Repositories.GetContents(ctx, "acme", "manifests", "environments/devel/api.json", &github.RepositoryContentGetOptions{Ref: "bump/api"})
	if err != nil {
		t.Fatalf("GetContents: %v", err)
	}
	content, _ := fc.GetContent()
	if content != "v1\n" {
		t.Errorf("content = %q", content)
	}
	// A stale sha is a conflict.
	_, resp, err := gh.Repositories.UpdateFile(ctx, "acme", "manifests", "environments/devel/api.json", &github.RepositoryContentFileOptions{
		Message: github.String("bump"), Content: []byte("v2\n"), SHA: github.String("0000000000000000000000000000000000000000"), Branch: github.String("bump/api"),
	})
	if err == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("stale sha: err = %v, want 409", err)
	}
	if _, _, err := gh.Repositories.UpdateFile(ctx, "acme", "manifests", "environments/devel/api.json", &github.RepositoryContentFileOptions{
		Message: github.String("bump api to v2"), Content: []byte("v2\n"), SHA: fc.SHA, Branch: github.String("bump/api"),
	}); err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	// main moves on in another file: the merge is clean.
	srv.Repo("acme", "manifests").Commit("main", map[string]string{"other.json": "o2\n"}, "other")

	pr, _, err := gh.PullRequests.Create(ctx, "acme", "manifests", &github.NewPullRequest{Title: github.String("Bump api"), Head: github.String("acme:bump/api"), Base: github.String("main")})
	if err != nil {
		t.Fatalf("Create PR: %v", err)
	}
	if _, resp, err := gh.PullRequests.Create(ctx, "acme", "manifests", &github.NewPullRequest{Title: github.String("again"), Head: github.String("bump/api"), Base: github.String("main")}); err == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("duplicate PR: err = %v, want 422", err)
	}
	open, _, err := gh.PullRequests.List(ctx, "acme", "manifests", &github.PullRequestListOptions{Head: "acme:bump/api", Base: "main"})
	if err != nil || len(open) != 1 || open[0].GetNumber() != pr.GetNumber() {
		t.Fatalf("List = %v, %v; want the PR", open, err)
	}
	files, _, err := gh.PullRequests.ListFiles(ctx, "acme", "manifests", pr.GetNumber(), nil)
	if err != nil || len(files) != 1 || files[0].GetFilename() != "environments/devel/api.json" {
		t.Fatalf("ListFiles = %v, %v", files, err)
	}
	if _, resp, err := gh.PullRequests.Merge(ctx, "acme", "manifests", pr.GetNumber(), "", &github.PullRequestOptions{SHA: base}); err == nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("merge with stale head sha: err = %v, want 409", err)
	}
	if _, _, err := gh.PullRequests.Merge(ctx, "acme", "manifests", pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash"}); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	want := map[string]string{"environments/devel/api.json": "v2\n", "other.json": "o2\n"}
	if diff := cmp.Diff(want, srv.Repo("acme", "manifests").Files("main")); diff != "" {
		t.Errorf("main after merge (-want +got):\n%s", diff)
	}
	if got := srv.Repo("acme", "manifests").PullRequests()[0]; !got.Merged || got.State != "closed" {
		t.Errorf("PR after merge: %+v", got)
	}
	// Force-push semantics of the refs API.
	if _, resp, err := gh.Git.UpdateRef(ctx, "acme", "manifests", &github.Reference{Ref: github.String("refs/heads/bump/api"), Object: &github.GitObject{SHA: github.String(base)}}, false); err == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("non-fast-forward update: err = %v, want 422", err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "manifests", &github.Reference{Ref: github.String("refs/heads/bump/api"), Object: &github.GitObject{SHA: github.String(base)}}, true); err != nil {
		t.Errorf("forced update: %v", err)
	}
	if _, err := gh.Git.DeleteRef(ctx, "acme", "manifests", "heads/bump/api"); err != nil {
		t.Errorf("DeleteRef: %v", err)
	}
	if srv.Repo("acme", "manifests").Branch("bump/api") != "" {
		t.Error("branch still exists after DeleteRef")
	}
}

func TestPermissionsAndTeams(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	srv.Repo("acme", "manifests").SetPermission("mallory", "triage")
	srv.Repo("acme", "manifests").SetPermission("maria", "maintain")
	srv.AddTeamMember("acme", "sre", "sam")
	gh := newClient(t, srv)
	for _, tc := range []struct{ user, role string }{{"mallory", "triage"}, {"maria", "maintain"}, {"acme", "admin"}, {"nobody", "none"}} {
		p, _, err := gh.Repositories.GetPermissionLevel(ctx, "acme", "manifests", tc.user)
		if err != nil {
			t.Fatalf("GetPermissionLevel(%s): %v", tc.user, err)
		}
		if p.GetUser().GetRoleName() != tc.role {
			t.Errorf("%s: role_name = %q, want %q", tc.user, p.GetUser().GetRoleName(), tc.role)
		}
	}
	if m, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "acme", "sre", "sam"); err != nil || m.GetState() != "active" {
		t.Errorf("sam in acme/sre: %v, %v", m, err)
	}
	if _, resp, err := gh.Teams.GetTeamMembershipBySlug(ctx, "acme", "sre", "mallory"); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("mallory in acme/sre: err = %v, want 404", err)
	}
}

func TestAppInstallationTokensExpireAndRefresh(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t, githubtest.WithTokenTTL(30*time.Second))
	srv.CreateRepo("acme", "manifests", "main")
	tr, err := ghinstallation.New(http.DefaultTransport, srv.App().ID(), srv.App().InstallationID(), srv.App().PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = srv.URL()
	gh, err := github.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := gh.Repositories.Get(ctx, "acme", "manifests"); err != nil {
			t.Fatalf("Get with installation token: %v", err)
		}
	}
	// ghinstallation renews a token that expires within a minute, so a 30s TTL means a new token per call.
	if got := srv.App().TokensIssued(); got != 2 {
		t.Errorf("tokens issued = %d, want 2", got)
	}

	// A JWT signed by another key is refused.
	other := githubtest.New(t)
	bad, err := ghinstallation.New(http.DefaultTransport, srv.App().ID(), srv.App().InstallationID(), other.App().PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	bad.BaseURL = srv.URL()
	ghBad, _ := github.NewClient(&http.Client{Transport: bad}).WithEnterpriseURLs(srv.URL(), srv.URL())
	if _, _, err := ghBad.Repositories.Get(ctx, "acme", "manifests"); err == nil {
		t.Error("a JWT signed by the wrong key was accepted")
	}
	// No credentials: 401.
	anon, _ := github.NewClient(nil).WithEnterpriseURLs(srv.URL(), srv.URL())
	_, _, err = anon.Repositories.Get(ctx, "acme", "manifests")
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous: err = %v, want 401", err)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	gh := newClient(t, srv)
	srv.Faults().Inject(githubtest.Fault{Method: "GET", Route: "/repos/{owner}/{repo}", Status: http.StatusBadGateway, Times: 2})
	srv.Faults().Inject(githubtest.Fault{Route: "/repos/{owner}/{repo}", Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	var got []int
	for range 4 {
		_, resp, _ := gh.Repositories.Get(ctx, "acme", "manifests")
		got = append(got, resp.StatusCode)
	}
	if diff := cmp.Diff([]int{502, 502, 429, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if n := srv.Faults().Left(); n != 0 {
		t.Errorf("faults left = %d", n)
	}
}

// TestLatency: WithLatency/SetLatency slow every response and a Fault with only a Delay slows the matching
// request without failing it (lower bounds only: the wait is a sleep, so at least that long).
func TestLatency(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t, githubtest.WithLatency(50*time.Millisecond))
	srv.CreateRepo("acme", "manifests", "main")
	gh := newClient(t, srv)
	timed := func() (time.Duration, int) {
		start := time.Now()
		_, resp, _ := gh.Repositories.Get(ctx, "acme", "manifests")
		return time.Since(start), resp.StatusCode
	}
	if d, code := timed(); code != http.StatusOK || d < 50*time.Millisecond {
		t.Errorf("WithLatency(50ms): %d after %s", code, d)
	}
	srv.Faults().SetLatency(0)
	srv.Faults().Inject(githubtest.Fault{Method: "GET", Route: "/repos/{owner}/{repo}", Delay: 200 * time.Millisecond})
	if d, code := timed(); code != http.StatusOK || d < 200*time.Millisecond {
		t.Errorf("delay-only fault: %d after %s, want 200 after ≥200ms", code, d)
	}
	if n := srv.Faults().Left(); n != 0 {
		t.Errorf("faults left = %d", n)
	}
}

func TestRootURL(t *testing.T) {
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	gh := github.NewClient(nil).WithAuthToken(srv.Token())
	u, err := gh.BaseURL.Parse(srv.RootURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	gh.BaseURL = u
	if _, _, err := gh.Repositories.Get(context.Background(), "acme", "manifests"); err != nil {
		t.Errorf("Get at the root URL: %v", err)
	}
}

func TestPaginationAndCompare(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	base := srv.Repo("acme", "manifests").Branch("main")
	var shas []string
	for i := range 3 {
		shas = append(shas, srv.Repo("acme", "manifests").Commit("main", map[string]string{"f": strings.Repeat("x", i)}, "c"))
	}
	for range 5 {
		srv.Repo("acme", "manifests").AddCheckRun(githubtest.CheckRun{Name: "ci", HeadSHA: shas[2], Conclusion: "success"})
	}
	gh := newClient(t, srv)
	opts := &github.ListCheckRunsOptions{Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 2}}
	var got int
	for pages := 0; ; pages++ {
		res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "manifests", "main", opts)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		got += len(res.CheckRuns)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if got != 5 {
		t.Errorf("paginated through %d check runs, want 5", got)
	}
	cmp, _, err := gh.Repositories.CompareCommits(ctx, "acme", "manifests", base, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 3 || len(cmp.Commits) != 3 || cmp.Commits[0].GetSHA() != shas[0] {
		t.Errorf("compare: status %q ahead %d commits %d", cmp.GetStatus(), cmp.GetAheadBy(), len(cmp.Commits))
	}
}

// TestAppJWTJudgedOnServersClock: as GitHub does, the App's JWT is refused
// when issued in the server's future or expired by its clock, with GitHub's
// messages, and accepted otherwise.
func TestAppJWTJudgedOnServersClock(t *testing.T) {
	srv := githubtest.New(t)
	key, err := jwt.ParseRSAPrivateKeyFromPEM(srv.App().PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	for _, c := range []struct {
		name     string
		iat, exp time.Time
		status   int
		message  string
	}{
		{"issued 30s ago", now.Add(-30 * time.Second), now.Add(90 * time.Second), http.StatusCreated, ""},
		{"issued a minute in the future", now.Add(time.Minute), now.Add(3 * time.Minute), http.StatusUnauthorized, "'Issued at' claim ('iat')"},
		{"expired a minute ago", now.Add(-3 * time.Minute), now.Add(-time.Minute), http.StatusUnauthorized, "'Expiration time' claim ('exp')"},
	} {
		t.Run(c.name, func(t *testing.T) {
			signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
				IssuedAt: jwt.NewNumericDate(c.iat), ExpiresAt: jwt.NewNumericDate(c.exp), Issuer: strconv.FormatInt(srv.App().ID(), 10),
			}).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/app/installations/%d/access_tokens", srv.URL(), srv.App().InstallationID()), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+signed)
			req.Header.Set("Accept", "application/vnd.github+json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.message) {
				t.Errorf("answer %d %s; want %d with %q", resp.StatusCode, body, c.status, c.message)
			}
		})
	}
}

// TestRequestCountedBeforeItsEffect: a test that sees a request's effect in the world (a check run) sees the
// request counted too, even while the server is still answering it. A count read after the effect used
// to miss a request whose answer was still being checked against GitHub's description.
func TestRequestCountedBeforeItsEffect(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	sha := srv.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/a.json": "{}"}, "change")
	gh := newClient(t, srv)
	const route = "/repos/{owner}/{repo}/check-runs"
	for i := range 30 {
		done := make(chan error, 1)
		go func() {
			_, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "manifests", github.CreateCheckRunOptions{
				Name: fmt.Sprintf("stagehand/env%d", i), HeadSHA: sha, Status: github.String("queued"),
			})
			done <- err
		}()
		for len(srv.Repo("acme", "manifests").CheckRuns()) <= i {
			time.Sleep(10 * time.Microsecond)
		}
		if got := srv.CountRequests("POST", route); got != i+1 {
			t.Fatalf("check run %d is in the world but %d POSTs are counted, want %d", i+1, got, i+1)
		}
		if err := <-done; err != nil {
			t.Fatalf("CreateCheckRun: %v", err)
		}
	}
	for _, r := range srv.Requests() {
		if r.Route == route && r.Status != http.StatusCreated {
			t.Errorf("recorded %+v, want its final status 201", r)
		}
	}
}
