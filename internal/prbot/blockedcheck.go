package prbot

import (
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
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

// blockedNote says why the promotion pair cannot be opened, as the neutral
// check run blockedCheckName(pair) on sha.
func blockedNote(sha string, pair promote.Pair, reason string) remote.Note {
	return remote.Note{SHA: sha, Name: blockedCheckName(pair), Title: blockedCheckTitle,
		Summary: fmt.Sprintf("Not opening a promotion from %s to %s: %s.", pair.From, pair.To, reason)}
}

// clearedNote rewrites the check run of an earlier block on sha, if there
// is one, to say that nothing blocks the promotion any more.
func clearedNote(sha string, pair promote.Pair) remote.Note {
	return remote.Note{SHA: sha, Name: blockedCheckName(pair), Title: clearedCheckTitle,
		Summary: fmt.Sprintf("No lock or window blocks the promotion from %s to %s any more.", pair.From, pair.To)}
}

// A blocked bump with no pull request open says why the same way, in the
// neutral check run named like its branch: stagehand/bump-<env>-<file>.
const (
	blockedBumpTitle = "Bump blocked"
	clearedBumpTitle = "Bump no longer blocked"
)
