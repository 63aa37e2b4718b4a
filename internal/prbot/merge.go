package prbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// pipeline reads and parses pipeline.yaml at ref: beside environments/, or
// else inside it (nil when the repository has neither).
func (b *Bot) pipeline(ctx context.Context, ref string) (*promote.Pipeline, error) {
	for _, name := range []string{b.path(promote.FileName), b.path("environments/" + promote.FileName)} {
		data, _, err := b.file(ctx, name, ref)
		if err != nil {
			return nil, err
		}
		if data != nil {
			return promote.Parse(name, data)
		}
	}
	return nil, nil
}

// stageLockPath is the lockPath pipeline.yaml gives env ("" without pipeline or lock path).
func (b *Bot) stageLockPath(ctx context.Context, env string) (string, error) {
	pl, err := b.pipeline(ctx, b.base)
	if err != nil || pl == nil {
		return "", err
	}
	if s, ok := pl.Stage(env); ok {
		return s.LockPath, nil
	}
	return "", nil
}

// readiness says whether a pull request moving scope may be merged now and, if not, why.
func (b *Bot) readiness(ctx context.Context, pr *github.PullRequest, scope lockScope) (ready bool, reason string, err error) {
	if pr.GetState() != "open" {
		return false, fmt.Sprintf("pull request #%d is %s", pr.GetNumber(), pr.GetState()), nil
	}
	if pr.GetDraft() {
		return false, fmt.Sprintf("pull request #%d is a draft", pr.GetNumber()), nil
	}
	locks, err := b.scopeLocks(ctx, scope)
	if err != nil {
		return false, "", err
	}
	if len(locks) > 0 {
		return false, "locked: " + strings.Join(locks, "; "), nil
	}
	waiting, err := b.checksPending(ctx, pr.GetHead().GetSHA())
	if err != nil {
		return false, "", err
	}
	if waiting != "" {
		return false, waiting, nil
	}
	return true, "", nil
}

// checksPending returns "" when every check run and commit status on sha has
// succeeded and every required check is among them, else what is missing.
func (b *Bot) checksPending(ctx context.Context, sha string) (string, error) {
	green := map[string]bool{}
	var pending, failed []string
	opts := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		runs, resp, err := b.gh.Checks.ListCheckRunsForRef(ctx, b.owner, b.repo, sha, opts)
		if err != nil {
			return "", fmt.Errorf("listing check runs of %s: %w", sha, err)
		}
		for _, r := range runs.CheckRuns {
			name := r.GetName()
			switch {
			case r.GetStatus() != "completed":
				pending = append(pending, name)
			case r.GetConclusion() == "success" || r.GetConclusion() == "neutral" || r.GetConclusion() == "skipped":
				green[name] = true
			default:
				failed = append(failed, name+" ("+r.GetConclusion()+")")
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	st, _, err := b.gh.Repositories.GetCombinedStatus(ctx, b.owner, b.repo, sha, &github.ListOptions{PerPage: 100})
	if err != nil {
		return "", fmt.Errorf("reading commit status of %s: %w", sha, err)
	}
	for _, s := range st.Statuses {
		switch s.GetState() {
		case "success":
			green[s.GetContext()] = true
		case "pending":
			pending = append(pending, s.GetContext())
		default:
			failed = append(failed, s.GetContext()+" ("+s.GetState()+")")
		}
	}
	for _, name := range b.requireCheck {
		if !green[name] && !containsPrefix(pending, name) && !containsPrefix(failed, name) {
			pending = append(pending, name+" (not reported yet)")
		}
	}
	sort.Strings(pending)
	sort.Strings(failed)
	switch {
	case len(failed) > 0:
		return "checks failed: " + strings.Join(failed, ", "), nil
	case len(pending) > 0:
		return "waiting for checks: " + strings.Join(pending, ", "), nil
	}
	return "", nil
}

func containsPrefix(list []string, name string) bool {
	for _, s := range list {
		if s == name || strings.HasPrefix(s, name+" (") {
			return true
		}
	}
	return false
}

// mergeNow merges the pull request at the head sha it was judged on; a head
// that moved in between (a newer bump) is reported as not merged.
func (b *Bot) mergeNow(ctx context.Context, pr *github.PullRequest) (bool, string, error) {
	_, _, err := b.gh.PullRequests.Merge(ctx, b.owner, b.repo, pr.GetNumber(), "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA(), MergeMethod: b.mergeMethod})
	switch {
	case isStatus(err, http.StatusConflict):
		return false, "the head branch moved while merging", nil
	case isStatus(err, http.StatusMethodNotAllowed):
		var e *github.ErrorResponse
		errors.As(err, &e)
		return false, "not mergeable: " + e.Message, nil
	case err != nil:
		return false, "", fmt.Errorf("merging #%d: %w", pr.GetNumber(), err)
	}
	return true, "", nil
}

// mergeWhenReady polls the pull request until its checks are green and no
// lock or hold blocks scope, then merges it; after timeout it gives up and
// says why. While a lock blocks, the pull request carries one comment saying so.
func (b *Bot) mergeWhenReady(ctx context.Context, number int, scope lockScope, timeout time.Duration) (bool, string, error) {
	deadline := b.now().Add(timeout)
	lockNoted := ""
	for {
		pr, _, err := b.gh.PullRequests.Get(ctx, b.owner, b.repo, number)
		if err != nil {
			return false, "", fmt.Errorf("reading pull request #%d: %w", number, err)
		}
		ready, reason, err := b.readiness(ctx, pr, scope)
		if err != nil {
			return false, "", err
		}
		if ready {
			merged, why, err := b.mergeNow(ctx, pr)
			if err != nil || merged {
				return merged, why, err
			}
			reason = why
		}
		if pr.GetState() != "open" {
			return false, reason, nil
		}
		if strings.HasPrefix(reason, "locked: ") && reason != lockNoted {
			if err := b.upsertComment(ctx, number, "lock", fmt.Sprintf("Not merging yet: environment lock path `%s` is locked or held. %s\n\nStagehand merges once no lock or hold blocks and the checks are green.", scope.lockPath, strings.TrimPrefix(reason, "locked: "))); err != nil {
				return false, "", err
			}
			lockNoted = reason
		}
		if strings.HasPrefix(reason, "checks failed: ") {
			return false, reason, nil
		}
		if !b.now().Before(deadline) {
			return false, fmt.Sprintf("not merged within %s: %s", timeout, reason), nil
		}
		if err := sleep(ctx, b.poll); err != nil {
			return false, reason, err
		}
	}
}
