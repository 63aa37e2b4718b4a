package github

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// maxAuthorCommits bounds the commits whose pull requests Authors looks up (one request each): a range
// longer than that is refused (an error), as one GitHub cannot list is, never answered in part.
const maxAuthorCommits = 250

// noreplyDomain is the domain of the e-mail addresses GitHub gives its users for commits
// (<id>+<login>@users.noreply.github.com, or <login>@… for older accounts).
const noreplyDomain = "users.noreply.github.com"

// Authors lists, lower case, sorted, once each, who wrote the commits after base up to and including head
// (GitHub's compare API, base...head: the commits of head since its merge base with base), or head alone
// when base is "": for each commit its author's and committer's GitHub logins and commit e-mail addresses,
// the co-authors its message names (Co-authored-by trailers, gitsource.CoAuthors), and the author and the
// merger of each merged pull request GitHub associates with it. It is approval.Authors for four-eyes.
//
// Whoever pushes writes a commit's metadata, so an e-mail address that cannot be tied to a person is
// refused rather than ignored: a commit whose author GitHub ties to no login (the commit's author is
// null), or a co-author whose address is neither a commit e-mail of a login in the range nor a
// users.noreply.github.com address, gives an *approval.UntiedAuthorError naming it. A committer GitHub
// knows no login for is listed by e-mail address.
func (c *Client) Authors(ctx context.Context, base, head string) ([]string, error) {
	commits, err := c.rangeCommits(ctx, base, head)
	if err != nil {
		return nil, err
	}
	if len(commits) > maxAuthorCommits {
		return nil, fmt.Errorf("listing the pull requests of %s...%s on %s: %d commits, at most %d are looked up", short(base), short(head), c.Repo(), len(commits), maxAuthorCommits)
	}
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" {
			seen[strings.ToLower(s)] = true
		}
	}
	// The commit e-mail addresses GitHub ties to a login in this range: a co-author named by one is that login.
	logins := map[string]string{}
	for _, cm := range commits {
		for _, side := range []struct {
			user   *gh.User
			person *gh.CommitAuthor
		}{{cm.GetAuthor(), cm.GetCommit().GetAuthor()}, {cm.GetCommitter(), cm.GetCommit().GetCommitter()}} {
			add(side.user.GetLogin())
			add(side.person.GetEmail())
			if l, e := side.user.GetLogin(), side.person.GetEmail(); l != "" && e != "" {
				logins[strings.ToLower(e)] = strings.ToLower(l)
			}
		}
	}
	for _, cm := range commits {
		if cm.GetAuthor().GetLogin() == "" {
			return nil, &approval.UntiedAuthorError{Email: cm.GetCommit().GetAuthor().GetEmail(), Commit: cm.GetSHA(), Role: "author"}
		}
		for _, e := range gitsource.CoAuthors(cm.GetCommit().GetMessage()) {
			login, ok := logins[e]
			if !ok {
				login, ok = noreplyLogin(e)
			}
			if !ok {
				return nil, &approval.UntiedAuthorError{Email: e, Commit: cm.GetSHA(), Role: "co-author"}
			}
			add(login)
			add(e)
		}
	}
	people, err := c.pullPeople(ctx, commits)
	if err != nil {
		return nil, err
	}
	for _, l := range people {
		add(l)
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// rangeCommits returns the commits after base up to head (head alone when base is "").
func (c *Client) rangeCommits(ctx context.Context, base, head string) ([]*gh.RepositoryCommit, error) {
	if base == "" {
		cm, _, err := c.rest.Repositories.GetCommit(ctx, c.owner, c.repo, head, nil)
		if err != nil {
			return nil, fmt.Errorf("reading commit %s of %s: %w", short(head), c.Repo(), err)
		}
		return []*gh.RepositoryCommit{cm}, nil
	}
	var out []*gh.RepositoryCommit
	opts := &gh.ListOptions{PerPage: 100}
	for {
		cmp, resp, err := c.rest.Repositories.CompareCommits(ctx, c.owner, c.repo, base, head, opts)
		if err != nil {
			return nil, fmt.Errorf("comparing %s...%s on %s: %w", short(base), short(head), c.Repo(), err)
		}
		out = append(out, cmp.Commits...)
		if len(out) >= cmp.GetTotalCommits() || len(cmp.Commits) == 0 || resp.NextPage == 0 {
			if len(out) < cmp.GetTotalCommits() {
				return nil, fmt.Errorf("comparing %s...%s on %s: GitHub listed %d of %d commits", short(base), short(head), c.Repo(), len(out), cmp.GetTotalCommits())
			}
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// pullPeople returns the logins of the authors and mergers of the merged pull requests GitHub associates
// with commits ("list pull requests associated with a commit"; the merger from the pull request itself,
// whose merged_by the list does not carry). Each pull request is read once.
func (c *Client) pullPeople(ctx context.Context, commits []*gh.RepositoryCommit) ([]string, error) {
	var out []string
	done := map[int]bool{}
	for _, cm := range commits {
		opts := &gh.ListOptions{PerPage: 100}
		for {
			prs, resp, err := c.rest.PullRequests.ListPullRequestsWithCommit(ctx, c.owner, c.repo, cm.GetSHA(), opts)
			if err != nil {
				return nil, fmt.Errorf("listing the pull requests of commit %s on %s: %w", short(cm.GetSHA()), c.Repo(), err)
			}
			for _, pr := range prs {
				if pr.MergedAt == nil || done[pr.GetNumber()] {
					continue
				}
				done[pr.GetNumber()] = true
				full, _, err := c.rest.PullRequests.Get(ctx, c.owner, c.repo, pr.GetNumber())
				if err != nil {
					return nil, fmt.Errorf("reading pull request #%d of %s: %w", pr.GetNumber(), c.Repo(), err)
				}
				if full.GetUser().GetLogin() == "" || full.GetMergedBy().GetLogin() == "" {
					return nil, fmt.Errorf("reading pull request #%d of %s: GitHub names no author or no merger of the merged pull request", pr.GetNumber(), c.Repo())
				}
				out = append(out, full.GetUser().GetLogin(), full.GetMergedBy().GetLogin())
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
	}
	return out, nil
}

// noreplyLogin is the login of a GitHub noreply address: "12345+alice@users.noreply.github.com" and
// "alice@users.noreply.github.com" are alice's.
func noreplyLogin(email string) (string, bool) {
	local, domain, ok := strings.Cut(strings.ToLower(email), "@")
	if !ok || domain != noreplyDomain {
		return "", false
	}
	if _, l, found := strings.Cut(local, "+"); found {
		local = l
	}
	return local, local != ""
}

var _ approval.Authors = (*Client)(nil)
