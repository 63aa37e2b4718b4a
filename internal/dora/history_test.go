package dora_test

import (
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// t0 is when the scripted history begins.
var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus days and a duration.
func at(days int, d time.Duration) time.Time { return t0.Add(time.Duration(days)*24*time.Hour + d) }

// entry is one scripted history entry that took ten minutes.
func entry(id int64, rev, result string, finished time.Time) approval.Entry {
	return approval.Entry{ID: id, Revision: rev, Result: result, Started: finished.Add(-10 * time.Minute), Finished: finished}
}

func pinned(e approval.Entry, to string) approval.Entry {
	e.PinnedTo = to
	return e
}

// scripted is an environment's history with known answers, newest first as
// the state keeps it:
//
//	 1 r1  succeeded       day 0 +1h    the first deploy
//	 2 r2  rejected                     not a deploy
//	 3 r3  failed          day 2        an incident begins
//	 4 r4  succeeded       day 2 +3h    ends it: restored in 3h
//	 5 r5  succeeded       day 5        a change failure, known at 6
//	 6 r5  pinned to r4    day 5 +2h10m an incident rollback 2h after 5: restored in 2h10m
//	 7 r6  pinned to r4    day 6        the same pin: not another rollback
//	 8 r7  interrupted     day 8        the reconciler restarted mid-apply: not a deploy
//	 9 r7  succeeded       day 8 +20m   the next leader's apply of what was left
//	10 r8  rolled-back     day 10       an incident begins
//	11 r9  failed          day 10 +1h   its verification failed: the same incident
//	12 r10 succeeded       day 11       ends it: restored in 1 day
//	13 r11 succeeded       day 20
//	14 r11 pinned to r10   day 22       a rollback 2 days after 13: past the rollback window
func scripted() []approval.Entry {
	verifyFailed := entry(11, "r9", approval.ResultFailed, at(10, time.Hour))
	verifyFailed.Message = "verification failed: smoke-test"
	h := []approval.Entry{
		entry(1, "r1", approval.ResultSucceeded, at(0, time.Hour)),
		entry(2, "r2", approval.ResultRejected, at(1, 0)),
		entry(3, "r3", approval.ResultFailed, at(2, 0)),
		entry(4, "r4", approval.ResultSucceeded, at(2, 3*time.Hour)),
		entry(5, "r5", approval.ResultSucceeded, at(5, 0)),
		pinned(entry(6, "r5", approval.ResultSucceeded, at(5, 2*time.Hour+10*time.Minute)), "r4"),
		pinned(entry(7, "r6", approval.ResultSucceeded, at(6, 0)), "r4"),
		entry(8, "r7", approval.ResultInterrupted, at(8, 0)),
		entry(9, "r7", approval.ResultSucceeded, at(8, 20*time.Minute)),
		entry(10, "r8", approval.ResultRolledBack, at(10, 0)),
		verifyFailed,
		entry(12, "r10", approval.ResultSucceeded, at(11, 0)),
		entry(13, "r11", approval.ResultSucceeded, at(20, 0)),
		pinned(entry(14, "r11", approval.ResultSucceeded, at(22, 0)), "r10"),
	}
	out := make([]approval.Entry, len(h))
	for i, e := range h {
		out[len(h)-1-i] = e
	}
	return out
}

// upTo is the scripted history as it was once entry id was recorded.
func upTo(id int64) []approval.Entry {
	h := scripted()
	for i, e := range h {
		if e.ID <= id {
			return h[i:]
		}
	}
	return nil
}
