package remote

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Checks are the check runs and commit statuses of the repository's
// commits: the bot reads them (an earlier stage's health, a pull request's
// readiness) and writes its own neutral notes in them.
type Checks struct {
	Repo *Repository
	// Now stamps the notes' completion (time.Now when nil).
	Now func() time.Time
	// Required are check names Pending waits for even before they report.
	Required []string
}

// Note is one of the bot's neutral check runs on a commit: its name,
// title and summary.
type Note struct {
	SHA, Name, Title, Summary string
}

// Note makes the newest check run called n.Name on n.SHA read n's title
// and summary, editing it if it exists and creating it only when create is
// set; unchanged text is left alone.
func (c *Checks) Note(ctx context.Context, n Note, create bool) error {
	r := c.Repo
	runs, _, err := r.gh.Checks.ListCheckRunsForRef(ctx, r.owner, r.name, n.SHA, &github.ListCheckRunsOptions{
		CheckName: github.String(n.Name), Filter: github.String("latest"),
	})
	if err != nil {
		return fmt.Errorf("listing %s check runs of %s: %w", n.Name, n.SHA, err)
	}
	output := &github.CheckRunOutput{Title: github.String(n.Title), Summary: github.String(n.Summary)}
	clock := c.Now
	if clock == nil {
		clock = time.Now
	}
	now := &github.Timestamp{Time: clock()}
	for _, run := range runs.CheckRuns {
		if run.GetName() != n.Name {
			continue
		}
		if run.GetOutput().GetSummary() == n.Summary {
			return nil
		}
		_, _, err := r.gh.Checks.UpdateCheckRun(ctx, r.owner, r.name, run.GetID(), github.UpdateCheckRunOptions{
			Name: n.Name, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
		})
		if err != nil {
			return fmt.Errorf("updating check run %s (%d) on %s: %w", n.Name, run.GetID(), n.SHA, err)
		}
		return nil
	}
	if !create {
		return nil
	}
	_, _, err = r.gh.Checks.CreateCheckRun(ctx, r.owner, r.name, github.CreateCheckRunOptions{
		Name: n.Name, HeadSHA: n.SHA, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
	})
	if err != nil {
		return fmt.Errorf("creating check run %s on %s: %w", n.Name, n.SHA, err)
	}
	return nil
}

// Latest returns the newest completed check run called name on sha (nil if none).
func (c *Checks) Latest(ctx context.Context, sha, name string) (*promote.Check, error) {
	r := c.Repo
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

// Pending returns "" when every check run and commit status on sha has
// succeeded and every required check is among them, else what is missing.
func (c *Checks) Pending(ctx context.Context, sha string) (string, error) {
	r := c.Repo
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
	for _, name := range c.Required {
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
