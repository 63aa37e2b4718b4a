package dora

import (
	"slices"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// Results of a deploy, as the metrics label them.
const (
	Succeeded  = "succeeded"
	Failed     = "failed"
	RolledBack = "rolled_back"
)

// DefaultRollbackWindow is how long after a deploy an incident rollback
// still marks it as a change failure when reconciler.yaml says nothing
// (dora.rollbackWindow).
const DefaultRollbackWindow = 24 * time.Hour

// Deploy is one history entry read as a deploy.
type Deploy struct {
	Entry approval.Entry
	// Result is Succeeded, Failed or RolledBack.
	Result string
	// Rollback marks an incident rollback (`reconciler rollback --now`): the
	// first deploy of versions pinned to an earlier revision.
	Rollback bool
	// Failure marks a change failure: failed, rolled back, or followed
	// within the rollback window by an incident rollback.
	Failure bool
	// FailedLater marks a succeeded deploy that the incident rollback
	// numbered RolledBackBy showed to be a change failure.
	FailedLater  bool
	RolledBackBy int64
	// Base is the revision that ran before (the newest succeeded deploy of
	// another revision before it; "" for the first one): the deploy's range
	// of commits is Base..Entry.Revision.
	Base string
	// RestoredFrom, on a succeeded deploy that ends an incident, is when the
	// incident began: the end of the first change failure since the last
	// succeeded deploy that was not one.
	RestoredFrom time.Time
}

// Restore is how long the incident a deploy ended lasted (0 when it ended none).
func (d Deploy) Restore() time.Duration {
	if d.RestoredFrom.IsZero() {
		return 0
	}
	return max(d.Entry.Finished.Sub(d.RestoredFrom), 0)
}

// LeadTimeCounts reports whether d has a lead time: a succeeded deploy of
// commits (an incident rollback deploys versions of an earlier revision).
func (d Deploy) LeadTimeCounts() bool { return d.Result == Succeeded && !d.Rollback }

// resultOf reads e's result as a deploy's; ok is false for an entry that is
// not a deploy (rejected, interrupted).
func resultOf(e approval.Entry) (string, bool) {
	switch e.Result {
	case approval.ResultSucceeded:
		return Succeeded, true
	case approval.ResultFailed:
		return Failed, true
	case approval.ResultRolledBack:
		return RolledBack, true
	}
	return "", false
}

// Deploys reads history (newest first, as the state keeps it) as its
// deploys, oldest first. window is the rollback window (<= 0:
// DefaultRollbackWindow).
func Deploys(history []approval.Entry, window time.Duration) []Deploy {
	if window <= 0 {
		window = DefaultRollbackWindow
	}
	var out []Deploy
	base := ""
	pinned := ""
	var incident time.Time // when the incident under way began (zero: none)
	for _, e := range slices.Backward(history) {
		result, ok := resultOf(e)
		if !ok {
			continue
		}
		d := Deploy{Entry: e, Result: result, Base: base}
		d.Rollback = e.PinnedTo != "" && e.PinnedTo != pinned
		pinned = e.PinnedTo
		if d.Rollback && len(out) > 0 {
			prev := &out[len(out)-1]
			if prev.Result == Succeeded && !prev.Failure && e.Started.Sub(prev.Entry.Finished) <= window {
				prev.Failure, prev.FailedLater, prev.RolledBackBy = true, true, e.ID
				if incident.IsZero() {
					incident = prev.Entry.Finished
				}
			}
		}
		switch result {
		case Succeeded:
			if !incident.IsZero() {
				d.RestoredFrom = incident
				incident = time.Time{}
			}
			if e.Revision != base {
				base = e.Revision
			}
		default:
			d.Failure = true
			if incident.IsZero() {
				incident = e.Finished
			}
		}
		out = append(out, d)
	}
	return out
}
