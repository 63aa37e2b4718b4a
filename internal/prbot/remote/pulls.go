package remote

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Pulls are the pull requests of the manifests repository into its base
// branch, one per head branch, and the bot's comments on them (one of each
// kind, edited in place).
type Pulls struct {
	Repo *Repository
}

// List returns the pull requests from branch into the base branch in state
// ("open", "closed").
func (p *Pulls) List(ctx context.Context, branch, state string) ([]*github.PullRequest, error) {
	r := p.Repo
	prs, _, err := r.gh.PullRequests.List(ctx, r.owner, r.name, &github.PullRequestListOptions{State: state, Head: r.owner + ":" + branch, Base: r.base})
	if err != nil {
		what := "pull requests"
		if state != "open" {
			what = state + " " + what
		}
		return nil, fmt.Errorf("listing %s from %s: %w", what, branch, err)
	}
	return prs, nil
}

// Open returns the open pull request from branch into the base branch (nil if none).
func (p *Pulls) Open(ctx context.Context, branch string) (*github.PullRequest, error) {
	prs, err := p.List(ctx, branch, "open")
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == branch {
			return pr, nil
		}
	}
	return nil, nil
}

// Get reads pull request number afresh.
func (p *Pulls) Get(ctx context.Context, number int) (*github.PullRequest, error) {
	pr, _, err := p.Repo.gh.PullRequests.Get(ctx, p.Repo.owner, p.Repo.name, number)
	if err != nil {
		return nil, fmt.Errorf("reading pull request #%d: %w", number, err)
	}
	return pr, nil
}

// Ensure opens a pull request from branch, or updates the open one's
// title and body when they differ. created reports a new pull request.
func (p *Pulls) Ensure(ctx context.Context, branch, title, body string) (pr *github.PullRequest, created bool, err error) {
	r := p.Repo
	for attempt := 0; attempt < 3; attempt++ {
		pr, err = p.Open(ctx, branch)
		if err != nil {
			return nil, false, err
		}
		if pr != nil {
			if pr.GetTitle() == title && pr.GetBody() == body {
				return pr, false, nil
			}
			pr, _, err = r.gh.PullRequests.Edit(ctx, r.owner, r.name, pr.GetNumber(), &github.PullRequest{Title: github.String(title), Body: github.String(body)})
			if err != nil {
				return nil, false, fmt.Errorf("updating pull request from %s: %w", branch, err)
			}
			return pr, false, nil
		}
		pr, _, err = r.gh.PullRequests.Create(ctx, r.owner, r.name, &github.NewPullRequest{Title: github.String(title), Body: github.String(body), Head: github.String(branch), Base: github.String(r.base)})
		if err == nil {
			return pr, true, nil
		}
		if !IsStatus(err, http.StatusUnprocessableEntity) {
			return nil, false, fmt.Errorf("opening pull request from %s: %w", branch, err)
		}
		// Someone opened it first (or there is nothing to merge): look again.
	}
	return nil, false, fmt.Errorf("opening pull request from %s: %w", branch, err)
}

// Close closes pull request number and deletes its head branch.
func (p *Pulls) Close(ctx context.Context, number int, branch string) error {
	if _, _, err := p.Repo.gh.PullRequests.Edit(ctx, p.Repo.owner, p.Repo.name, number, &github.PullRequest{State: github.String("closed")}); err != nil {
		return fmt.Errorf("closing pull request #%d: %w", number, err)
	}
	p.Repo.DeleteBranch(ctx, branch)
	return nil
}

// Merge merges pr at the head sha it was read at, by method (merge, squash
// or rebase). The error is GitHub's: IsStatus 409 when the head moved in
// between, 405 when GitHub will not merge it.
func (p *Pulls) Merge(ctx context.Context, pr *github.PullRequest, method string) error {
	_, _, err := p.Repo.gh.PullRequests.Merge(ctx, p.Repo.owner, p.Repo.name, pr.GetNumber(), "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA(), MergeMethod: method})
	return err
}

// Marker tags the bot's comments (and pull request bodies) so that each
// kind is written once and edited after.
func Marker(kind string) string { return "<!-- stagehand:" + kind + " -->" }

// prComment is the bot's comment of one kind on pull request number.
type prComment struct {
	number     int
	kind, text string
}

// UpsertComment writes one comment of a kind on a pull request, editing the
// previous one of that kind instead of adding another; unchanged text is left alone.
func (p *Pulls) UpsertComment(ctx context.Context, number int, kind, text string) error {
	return p.comment(ctx, prComment{number: number, kind: kind, text: text}, true)
}

// EditComment rewrites the comment of a kind if the pull request has one.
func (p *Pulls) EditComment(ctx context.Context, number int, kind, text string) error {
	return p.comment(ctx, prComment{number: number, kind: kind, text: text}, false)
}

// comment makes c the pull request's comment of its kind, editing the one
// there and adding one only when create is set.
func (p *Pulls) comment(ctx context.Context, c prComment, create bool) error {
	r := p.Repo
	body := Marker(c.kind) + "\n" + c.text
	comments, _, err := r.gh.Issues.ListComments(ctx, r.owner, r.name, c.number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return fmt.Errorf("listing comments of #%d: %w", c.number, err)
	}
	for _, old := range comments {
		if strings.HasPrefix(old.GetBody(), Marker(c.kind)) {
			if old.GetBody() == body {
				return nil
			}
			if _, _, err := r.gh.Issues.EditComment(ctx, r.owner, r.name, old.GetID(), &github.IssueComment{Body: github.String(body)}); err != nil {
				return fmt.Errorf("editing comment on #%d: %w", c.number, err)
			}
			return nil
		}
	}
	if !create {
		return nil
	}
	if _, _, err := r.gh.Issues.CreateComment(ctx, r.owner, r.name, c.number, &github.IssueComment{Body: github.String(body)}); err != nil {
		return fmt.Errorf("commenting on #%d: %w", c.number, err)
	}
	return nil
}
