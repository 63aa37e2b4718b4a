package prbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
)

// merger merges the bot's pull requests once they may be: open, not a
// draft, no lock or hold on what they move (gate) and their checks green
// (checks).
type merger struct {
	pulls  *remote.Pulls
	checks *remote.Checks
	gate   *lockGate
	method string        // merge, squash or rebase (WithMergeMethod)
	poll   time.Duration // between looks while waiting (WithPollInterval)
	now    func() time.Time
}

// readiness says whether a pull request moving scope may be merged now and, if not, why.
func (m *merger) readiness(ctx context.Context, pr *github.PullRequest, scope lockScope) (ready bool, reason string, err error) {
	if pr.GetState() != "open" {
		return false, fmt.Sprintf("pull request #%d is %s", pr.GetNumber(), pr.GetState()), nil
	}
	if pr.GetDraft() {
		return false, fmt.Sprintf("pull request #%d is a draft", pr.GetNumber()), nil
	}
	locks, err := m.gate.blocking(ctx, scope)
	if err != nil {
		return false, "", err
	}
	if len(locks) > 0 {
		return false, "locked: " + strings.Join(locks, "; "), nil
	}
	waiting, err := m.checks.Pending(ctx, pr.GetHead().GetSHA())
	if err != nil {
		return false, "", err
	}
	if waiting != "" {
		return false, waiting, nil
	}
	return true, "", nil
}

// mergeNow merges the pull request at the head sha it was judged on; a head
// that moved in between (a newer bump) is reported as not merged.
func (m *merger) mergeNow(ctx context.Context, pr *github.PullRequest) (bool, string, error) {
	err := m.pulls.Merge(ctx, pr, m.method)
	switch {
	case remote.IsStatus(err, http.StatusConflict):
		return false, "the head branch moved while merging", nil
	case remote.IsStatus(err, http.StatusMethodNotAllowed):
		var e *github.ErrorResponse
		errors.As(err, &e)
		return false, "not mergeable: " + e.Message, nil
	case err != nil:
		return false, "", fmt.Errorf("merging #%d: %w", pr.GetNumber(), err)
	}
	return true, "", nil
}

// whenReady polls the pull request until its checks are green and no
// lock or hold blocks scope, then merges it; after timeout it gives up and
// says why. While a lock blocks, the pull request carries one comment saying so.
func (m *merger) whenReady(ctx context.Context, number int, scope lockScope, timeout time.Duration) (bool, string, error) {
	deadline := m.now().Add(timeout)
	lockNoted := ""
	for {
		pr, err := m.pulls.Get(ctx, number)
		if err != nil {
			return false, "", err
		}
		ready, reason, err := m.readiness(ctx, pr, scope)
		if err != nil {
			return false, "", err
		}
		if ready {
			merged, why, err := m.mergeNow(ctx, pr)
			if err != nil || merged {
				return merged, why, err
			}
			reason = why
		}
		if pr.GetState() != "open" {
			return false, reason, nil
		}
		if strings.HasPrefix(reason, "locked: ") && reason != lockNoted {
			if err := m.pulls.UpsertComment(ctx, number, "lock", fmt.Sprintf("Not merging yet: environment lock path `%s` is locked or held. %s\n\nStagehand merges once no lock or hold blocks and the checks are green.", scope.lockPath, strings.TrimPrefix(reason, "locked: "))); err != nil {
				return false, "", err
			}
			lockNoted = reason
		}
		if strings.HasPrefix(reason, "checks failed: ") {
			return false, reason, nil
		}
		if !m.now().Before(deadline) {
			return false, fmt.Sprintf("not merged within %s: %s", timeout, reason), nil
		}
		if err := sleep(ctx, m.poll); err != nil {
			return false, reason, err
		}
	}
}
