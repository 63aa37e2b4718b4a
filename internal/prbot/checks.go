package prbot

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// checks are the check runs and commit statuses of the manifests
// repository's commits: the bot reads them (an earlier stage's health, a
// pull request's readiness) and writes its own neutral notes in them
// (blockedcheck.go).
type checks struct {
	repo     *repository
	now      func() time.Time
	required []string // check names a merge waits for (WithRequiredChecks)
}

// checkNote is one of the bot's neutral check runs on a commit: its name,
// title and summary.
type checkNote struct {
	sha, name, title, summary string
}

// note makes the newest check run called n.name on n.sha read n's title
// and summary, editing it if it exists and creating it only when create is
// set; unchanged text is left alone.
func (c *checks) note(ctx context.Context, n checkNote, create bool) error {
	r := c.repo
	runs, _, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.owner, r.name, n.sha, &github.ListCheckRunsOptions{
		CheckName: github.String(n.name), Filter: github.String("latest"),
	})
	if err != nil {
		return fmt.Errorf("listing %s check runs of %s: %w", n.name, n.sha, err)
	}
	output := &github.CheckRunOutput{Title: github.String(n.title), Summary: github.String(n.summary)}
	now := &github.Timestamp{Time: c.now()}
	for _, run := range runs.CheckRuns {
		if run.GetName() != n.name {
			continue
		}
		if run.GetOutput().GetSummary() == n.summary {
			return nil
		}
		_, _, err := r.gh.Checks.UpdateCheckRun(ctx, r.owner, r.name, run.GetID(), github.UpdateCheckRunOptions{
			Name: n.name, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
		})
		if err != nil {
			return fmt.Errorf("updating check run %s (%d) on %s: %w", n.name, run.GetID(), n.sha, err)
		}
		return nil
	}
	if !create {
		return nil
	}
	_, _, err = r.gh.Checks.CreateCheckRun(ctx, r.owner, r.name, github.CreateCheckRunOptions{
		Name: n.name, HeadSHA: n.sha, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
	})
	if err != nil {
		return fmt.Errorf("creating check run %s on %s: %w", n.name, n.sha, err)
	}
	return nil
}

// latest returns the newest completed check run called name on sha (nil if none).
func (c *checks) latest(ctx context.Context, sha, name string) (*promote.Check, error) {
	r := c.repo
	runs, _, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.owner, r.name, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), Status: github.String("completed"), Filter: github.String("latest"),
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s check runs of %s: %w", name, sha, err)
	}
	for _, run := range runs.CheckRuns {
		if run.GetName() != name || run.GetStatus() != "completed" {
			continue
		}
		return &promote.Check{ID: run.GetID(), Conclusion: run.GetConclusion(), Result: promote.CheckResult(run.GetConclusion(), run.GetOutput().GetTitle()),
			URL: run.GetHTMLURL(), CompletedAt: run.GetCompletedAt().Time}, nil
	}
	return nil, nil
}

// pending returns "" when every check run and commit status on sha has
// succeeded and every required check is among them, else what is missing.
func (c *checks) pending(ctx context.Context, sha string) (string, error) {
	r := c.repo
	green := map[string]bool{}
	var pending, failed []string
	opts := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		runs, resp, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.owner, r.name, sha, opts)
		if err != nil {
			return "", fmt.Errorf("listing check runs of %s: %w", sha, err)
		}
		for _, run := range runs.CheckRuns {
			name := run.GetName()
			switch {
			case run.GetStatus() != "completed":
				pending = append(pending, name)
			case run.GetConclusion() == "success" || run.GetConclusion() == "neutral" || run.GetConclusion() == "skipped":
				green[name] = true
			default:
				failed = append(failed, name+" ("+run.GetConclusion()+")")
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	st, _, err := r.gh.Repositories.GetCombinedStatus(ctx, r.owner, r.name, sha, &github.ListOptions{PerPage: 100})
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
	for _, name := range c.required {
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
