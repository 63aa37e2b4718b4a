package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
)

// TestMayApprovePerEnvironment: an environment's own approvers rule replaces github.approvers for it only.
// prod lets only acme/prod-approvers approve; staging follows the global rule (write, or acme/sre).
func TestMayApprovePerEnvironment(t *testing.T) {
	f := newFixture(t, func(g *config.GitHub) {
		g.Approvers = config.Approvers{MinPermission: "write", Teams: []string{"acme/sre"}}
	})
	f.srv.SetPermission(owner, repo, "wendy", "write")
	f.srv.SetPermission(owner, repo, "ada", "admin")
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
			got, err := c.MayApprove(context.Background(), tc.env, tc.login)
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

// TestAuthors: the logins and e-mail addresses of the commits after base up to head, from the compare API
// (every request and answer checked against GitHub's OpenAPI description by githubtest), or of head alone
// without a base.
func TestAuthors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := f.srv.Branch(owner, repo, "main")
	a := f.srv.Commit(owner, repo, "main", map[string]string{"a.json": "{}"}, "by maria")
	f.srv.SetCommitAuthor(owner, repo, a, "maria")
	b := f.srv.Commit(owner, repo, "main", map[string]string{"b.json": "{}"}, "by Mark")
	f.srv.SetCommitAuthor(owner, repo, b, "Mark")
	c := f.srv.Commit(owner, repo, "main", map[string]string{"c.json": "{}"}, "by nobody on GitHub")
	for _, tc := range []struct {
		name, base, head string
		want             []string
	}{
		{"range", base, c, []string{"maria", "maria@users.noreply.github.com", "mark", "mark@users.noreply.github.com", "test@github.invalid"}},
		{"one commit", a, b, []string{"mark", "mark@users.noreply.github.com"}},
		{"head alone", "", a, []string{"maria", "maria@users.noreply.github.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.client.Authors(ctx, tc.base, tc.head)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Authors (-want +got):\n%s", diff)
			}
		})
	}
}
