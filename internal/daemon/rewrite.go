package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/tally"
)

// rewritten returns the last revision applied to the environment (per
// history, the pass's) when rev does not descend from it (a force-push,
// history rewound), "" when history moved forward or nothing was applied
// yet. When the answer cannot be had (the remote unreachable), rev is
// treated as rewritten: a person decides rather than the gate waving it
// through.
func (w *worker) rewritten(ctx context.Context, rev string, history []approval.Entry) string {
	last := lastApplied(history)
	if last == "" || last == rev {
		return ""
	}
	ok, err := w.source.Descends(ctx, rev, last)
	if err != nil {
		w.log.Error(err, "checking that the revision descends from the last applied one; treating the history as rewritten",
			"environment", w.env, "revision", approval.ShortRevision(rev), "lastApplied", approval.ShortRevision(last))
		return last
	}
	if ok {
		return ""
	}
	return last
}

// lastApplied is the revision of the newest history entry that applied
// something (succeeded, or interrupted part way), "" when none did.
func lastApplied(history []approval.Entry) string {
	for _, e := range history {
		if tally.Applied(e) {
			return e.Revision
		}
	}
	return ""
}
