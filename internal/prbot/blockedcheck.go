package prbot

import (
	"context"
	"fmt"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// A promotion blocked by a lock or a closed window has no pull request to
// comment on when none is open yet. The bot then says why in a completed,
// neutral check run on the base branch's head commit, named like the
// promotion branch: "stagehand/promote-<from>-<to>" (the Checks API is what
// a GitHub App may write on a commit; commit comments are not in our API
// subset). One such run per commit is kept and edited in place; when the
// block is gone, the run on the current head says so.

const (
	blockedCheckTitle = "Promotion blocked"
	clearedCheckTitle = "Promotion no longer blocked"
)

// blockedCheckName is the check run that explains a blocked promotion.
func blockedCheckName(pair promote.Pair) string { return pair.Branch() }

// reportBlocked writes why the promotion pair cannot be opened as the
// neutral check run blockedCheckName(pair) on sha.
func (b *Bot) reportBlocked(ctx context.Context, sha string, pair promote.Pair, reason string) error {
	summary := fmt.Sprintf("Not opening a promotion from %s to %s: %s.", pair.From, pair.To, reason)
	return b.writeBlockedCheck(ctx, sha, blockedCheckName(pair), blockedCheckTitle, summary, true)
}

// clearBlocked rewrites the check run of an earlier block on sha, if there
// is one, to say that nothing blocks the promotion any more.
func (b *Bot) clearBlocked(ctx context.Context, sha string, pair promote.Pair) error {
	summary := fmt.Sprintf("No lock or window blocks the promotion from %s to %s any more.", pair.From, pair.To)
	return b.writeBlockedCheck(ctx, sha, blockedCheckName(pair), clearedCheckTitle, summary, false)
}

// writeBlockedCheck makes the newest check run called name on sha read
// title and summary, editing it if it exists and creating it only when
// create is set; unchanged text is left alone.
func (b *Bot) writeBlockedCheck(ctx context.Context, sha, name, title, summary string, create bool) error {
	runs, _, err := b.gh.Checks.ListCheckRunsForRef(ctx, b.owner, b.repo, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), Filter: github.String("latest"),
	})
	if err != nil {
		return fmt.Errorf("listing %s check runs of %s: %w", name, sha, err)
	}
	output := &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)}
	now := &github.Timestamp{Time: b.now()}
	for _, r := range runs.CheckRuns {
		if r.GetName() != name {
			continue
		}
		if r.GetOutput().GetSummary() == summary {
			return nil
		}
		_, _, err := b.gh.Checks.UpdateCheckRun(ctx, b.owner, b.repo, r.GetID(), github.UpdateCheckRunOptions{
			Name: name, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
		})
		if err != nil {
			return fmt.Errorf("updating check run %s (%d) on %s: %w", name, r.GetID(), sha, err)
		}
		return nil
	}
	if !create {
		return nil
	}
	_, _, err = b.gh.Checks.CreateCheckRun(ctx, b.owner, b.repo, github.CreateCheckRunOptions{
		Name: name, HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: now, Output: output,
	})
	if err != nil {
		return fmt.Errorf("creating check run %s on %s: %w", name, sha, err)
	}
	return nil
}

// A blocked bump with no pull request open says why the same way, in the
// neutral check run named like its branch: stagehand/bump-<env>-<file>.
const (
	blockedBumpTitle = "Bump blocked"
	clearedBumpTitle = "Bump no longer blocked"
)
