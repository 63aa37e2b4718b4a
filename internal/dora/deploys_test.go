package dora_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// judged is what Deploys says of one deploy, in short.
type judged struct {
	ID           int64
	Result       string
	Base         string
	Rollback     bool
	Failure      bool
	RolledBackBy int64
	Restore      time.Duration
	LeadTime     bool
}

func TestDeploys(t *testing.T) {
	var got []judged
	for _, d := range dora.Deploys(scripted(), 24*time.Hour) {
		got = append(got, judged{ID: d.Entry.ID, Result: d.Result, Base: d.Base, Rollback: d.Rollback, Failure: d.Failure,
			RolledBackBy: d.RolledBackBy, Restore: d.Restore(), LeadTime: d.LeadTimeCounts()})
	}
	want := []judged{
		{ID: 1, Result: dora.Succeeded, LeadTime: true},
		{ID: 3, Result: dora.Failed, Base: "r1", Failure: true},
		{ID: 4, Result: dora.Succeeded, Base: "r1", Restore: 3 * time.Hour, LeadTime: true},
		{ID: 5, Result: dora.Succeeded, Base: "r4", Failure: true, RolledBackBy: 6, LeadTime: true},
		{ID: 6, Result: dora.Succeeded, Base: "r5", Rollback: true, Restore: 2*time.Hour + 10*time.Minute},
		{ID: 7, Result: dora.Succeeded, Base: "r5", LeadTime: true},
		{ID: 9, Result: dora.Succeeded, Base: "r6", LeadTime: true},
		{ID: 10, Result: dora.RolledBack, Base: "r7", Failure: true},
		{ID: 11, Result: dora.Failed, Base: "r7", Failure: true},
		{ID: 12, Result: dora.Succeeded, Base: "r7", Restore: 24 * time.Hour, LeadTime: true},
		{ID: 13, Result: dora.Succeeded, Base: "r10", LeadTime: true},
		{ID: 14, Result: dora.Succeeded, Base: "r11", Rollback: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deploys (-want +got):\n%s", diff)
	}

	// A rollback window of three days reaches back from 14 to 13: a change
	// failure, restored by the rollback two days later.
	wide := dora.Deploys(scripted(), 72*time.Hour)
	last, prev := wide[len(wide)-1], wide[len(wide)-2]
	if !prev.Failure || prev.RolledBackBy != 14 || last.Restore() != 2*24*time.Hour {
		t.Errorf("with a 72h window: 13 failure=%v rolledBackBy=%d, 14 restores in %s; want true, 14, 48h", prev.Failure, prev.RolledBackBy, last.Restore())
	}
}
