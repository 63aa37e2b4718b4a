package github_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// TestMayApprovePerEnvironment: an environment's own approvers rule replaces github.approvers for it only.
// prod lets only acme/prod-approvers approve; staging follows the global rule (write, or acme/sre).
func TestMayApprovePerEnvironment(t *testing.T) {
	f := newFixture(t, func(g *config.GitHub) {
		g.Approvers = config.Approvers{MinPermission: "write", Teams: []string{"acme/sre"}}
	})
	f.srv.Repo(owner, repo).SetPermission("wendy", "write")
	f.srv.Repo(owner, repo).SetPermission("ada", "admin")
	f.srv.AddTeamMember("acme", "prod-approvers", "pat")
	f.srv.AddTeamMember("acme", "sre", "sam")
	c, err := github.New(f.cfg, github.WithRetry(github.RetryPolicy{MaxAttempts: 2, BaseDelay: 10 * time.Millisecond, MaxWait: time.Second}),
		github.WithApprovals(map[string]config.Approvals{
			"prod":    {Required: 2, ForbidAuthors: true, Teams: []string{"acme/prod-approvers"}},
			"staging": {Required: 1, MinPermission: "write", Teams: []string{"acme/sre"}},
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env, login string
		want       github.Decision
	}{
		{"prod", "pat", github.Decision{Allowed: true, Why: "member of acme/prod-approvers"}},
		{"prod", "wendy", github.Decision{Why: "@wendy has write on acme/manifests; approving prod needs membership of acme/prod-approvers"}},
		{"prod", "ada", github.Decision{Why: "@ada has admin on acme/manifests; approving prod needs membership of acme/prod-approvers"}},
		{"prod", "sam", github.Decision{Why: "@sam has no access on acme/manifests; approving prod needs membership of acme/prod-approvers"}},
		{"staging", "wendy", github.Decision{Allowed: true, Why: "write on acme/manifests"}},
		{"staging", "sam", github.Decision{Allowed: true, Why: "member of acme/sre"}},
		{"staging", "pat", github.Decision{Why: "@pat has no access on acme/manifests; approving staging needs write permission or higher on acme/manifests, or membership of acme/sre"}},
		// An environment the client was not told about follows github.approvers.
		{"dev", "wendy", github.Decision{Allowed: true, Why: "write on acme/manifests"}},
	} {
		t.Run(tc.env+"/"+tc.login, func(t *testing.T) {
			got, err := c.Approvers().MayApprove(context.Background(), tc.env, tc.login)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MayApprove(%s, %s) (-want +got):\n%s", tc.env, tc.login, diff)
			}
		})
	}
}

func TestWithApprovalsRefusesAnEmptyRule(t *testing.T) {
	f := newFixture(t)
	_, err := github.New(f.cfg, github.WithApprovals(map[string]config.Approvals{"prod": {Required: 1}}))
	if err == nil || err.Error() != "configuring GitHub client: approval policy of prod: no one may approve (neither minPermission nor teams)" {
		t.Errorf("New = %v, want the empty rule of prod refused", err)
	}
}

// TestAuthors: who wrote the commits after base up to head, from the compare API (every request and answer
// checked against GitHub's OpenAPI description by githubtest), or of head alone without a base: authors
// and committers (each on its own), Co-authored-by trailers, and the author and merger of each merged pull
// request GitHub associates with a commit. An author or co-author e-mail GitHub ties to no login is refused
// by name, never left out.
func TestAuthors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := f.srv.Repo(owner, repo).Branch("main")
	a := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a.json": "{}"}, "by maria")
	f.srv.Repo(owner, repo).SetCommitAuthor(a, "maria")
	b := f.srv.Repo(owner, repo).Commit("main", map[string]string{"b.json": "{}"}, "by Mark")
	f.srv.Repo(owner, repo).SetCommitAuthor(b, "Mark")
	// Written by wendy, committed (rebased, pushed) by quinn.
	c := f.srv.Repo(owner, repo).Commit("main", map[string]string{"c.json": "{}"}, "by wendy, committed by quinn")
	f.srv.Repo(owner, repo).SetCommitPeople(c, githubtest.Person{Login: "wendy", Name: "Wendy", Email: "wendy@acme.example"},
		githubtest.Person{Login: "quinn", Name: "Quinn", Email: "quinn@acme.example"})
	// Co-authors: one by a commit e-mail of a login in the range (quinn's), one by a noreply address.
	d := f.srv.Repo(owner, repo).Commit("main", map[string]string{"d.json": "{}"},
		"pair work\n\nCo-authored-by: Q <Quinn@acme.example>\nCo-authored-by: Olga <123+Olga@users.noreply.github.com>\n")
	f.srv.Repo(owner, repo).SetCommitAuthor(d, "maria")
	// A pull request by pat, merged by sam, brought e.
	e := f.srv.Repo(owner, repo).Commit("main", map[string]string{"e.json": "{}"}, "by maria, through a pull request")
	f.srv.Repo(owner, repo).SetCommitAuthor(e, "maria")
	pr := f.srv.Repo(owner, repo).OpenPullRequest("feature", "main", "e", "pat")
	f.srv.Repo(owner, repo).RecordMerge(pr, e, "sam")
	// Untied: an author GitHub knows no login for; a co-author whose address no login in the range uses.
	untied := f.srv.Repo(owner, repo).Commit("main", map[string]string{"f.json": "{}"}, "by nobody on GitHub")
	unknownCo := f.srv.Repo(owner, repo).Commit("main", map[string]string{"g.json": "{}"}, "x\n\nCo-authored-by: Eve <eve@elsewhere.example>")
	f.srv.Repo(owner, repo).SetCommitAuthor(unknownCo, "maria")
	for _, tc := range []struct {
		name, base, head string
		want             []string
		untied           *approval.UntiedAuthorError
	}{
		{name: "authors", base: base, head: b, want: []string{"maria", "maria@users.noreply.github.com", "mark", "mark@users.noreply.github.com"}},
		{name: "head alone", base: "", head: a, want: []string{"maria", "maria@users.noreply.github.com"}},
		{name: "a committer who is not the author", base: b, head: c, want: []string{"quinn", "quinn@acme.example", "wendy", "wendy@acme.example"}},
		{name: "co-authors", base: b, head: d,
			want: []string{"123+olga@users.noreply.github.com", "maria", "maria@users.noreply.github.com", "olga", "quinn", "quinn@acme.example", "wendy", "wendy@acme.example"}},
		{name: "a merged pull request's author and merger", base: d, head: e, want: []string{"maria", "maria@users.noreply.github.com", "pat", "sam"}},
		{name: "an author tied to no login", base: e, head: untied, untied: &approval.UntiedAuthorError{Email: "test@github.invalid", Commit: untied, Role: "author"}},
		{name: "a co-author whose address a login uses only outside the range", base: c, head: d,
			untied: &approval.UntiedAuthorError{Email: "quinn@acme.example", Commit: d, Role: "co-author"}},
		{name: "a co-author tied to no login", base: untied, head: unknownCo, untied: &approval.UntiedAuthorError{Email: "eve@elsewhere.example", Commit: unknownCo, Role: "co-author"}},
		{name: "the whole range", base: base, head: unknownCo, untied: &approval.UntiedAuthorError{Email: "test@github.invalid", Commit: untied, Role: "author"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.client.Authors(ctx, tc.base, tc.head)
			if tc.untied != nil {
				var ua *approval.UntiedAuthorError
				if !errors.As(err, &ua) {
					t.Fatalf("Authors = %v, %v; want %v", got, err, tc.untied)
				}
				if diff := cmp.Diff(tc.untied, ua); diff != "" {
					t.Errorf("Authors' error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Authors (-want +got):\n%s", diff)
			}
		})
	}
}
