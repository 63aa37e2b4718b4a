package rollback

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// A rollback's --to: a history id is a number of up to six digits
// (optionally "#12"); a revision 7 to 40 hex digits.
var (
	historyIDRE   = regexp.MustCompile(`^#?[0-9]{1,6}$`)
	hexRevisionRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
)

// Target resolves a rollback's to over env's history (entries, newest
// first): "previous", a history entry id (`reconciler history`) or a
// revision. It returns the revision to roll back to ("" for previous without
// an earlier apply: the state before the environment's files last changed in
// git) and what the history says ran there (nil when it says nothing). An
// id or revision it cannot take wraps api.ErrUnknownRollbackTarget.
func Target(entries []approval.Entry, env, to string) (string, *prbot.Ran, error) {
	switch {
	case to == "previous":
		// What ran before the newest apply (approval.Previous).
		if e, ok := approval.Previous(entries); ok {
			return e.Revision, ran(*e), nil
		}
		return "", nil, nil
	case historyIDRE.MatchString(to):
		id, err := strconv.ParseInt(strings.TrimPrefix(to, "#"), 10, 64)
		if err != nil {
			return "", nil, fmt.Errorf("%w: history id %q: %w", api.ErrUnknownRollbackTarget, to, err)
		}
		e, err := approval.FindEntry(entries, env, id)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", api.ErrUnknownRollbackTarget, err)
		}
		// Only an apply that succeeded is a point where its versions ran.
		if e.Result != approval.ResultSucceeded {
			why := "its versions did not stay in the cluster"
			if e.Result == approval.ResultRejected {
				why = "its versions never ran"
			}
			return "", nil, fmt.Errorf("%w: history entry %d of %s was %s (%s): pick an entry that succeeded (`reconciler history --env %s`)",
				api.ErrUnknownRollbackTarget, id, env, e.Result, why, env)
		}
		return e.Revision, ran(*e), nil
	case hexRevisionRE.MatchString(to):
		for _, e := range entries {
			if e.Result == approval.ResultSucceeded && strings.HasPrefix(e.Revision, to) {
				return to, ran(e), nil
			}
		}
		return to, nil, nil
	}
	return "", nil, fmt.Errorf("%w: %q: want previous, a history id or a revision of 7 to 40 lowercase hex digits", api.ErrUnknownRollbackTarget, to)
}

// ran is what the history entry e says ran: its manifest's services (pinned
// versions included, rather than git's at the revision), when, and who
// approved it.
func ran(e approval.Entry) *prbot.Ran {
	r := &prbot.Ran{When: e.Finished, Approver: e.Approver}
	if e.Manifest != nil {
		r.Services = e.Manifest.Services
	}
	if e.ID > 0 {
		r.HistoryID = strconv.FormatInt(e.ID, 10)
	}
	return r
}
