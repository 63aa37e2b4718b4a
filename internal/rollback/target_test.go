package rollback

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// Target resolves "previous", history ids and revisions over the history
// alone (pure: no GitHub, no cluster); what cannot be a point that ran is
// refused as an unknown rollback target.
func TestTarget(t *testing.T) {
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	c1, c2, c3 := "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "3333333ccccccccccccccccccccccccccccccccc"
	web := []manifest.Service{{Name: "web", Version: "1.0.0"}}
	entries := []approval.Entry{
		{ID: 4, Revision: c3, Result: approval.ResultSucceeded, Finished: at.Add(3 * time.Hour), Approver: "carol"},
		{ID: 3, Revision: c2, Result: approval.ResultRejected, Finished: at.Add(2 * time.Hour)},
		{ID: 2, Revision: c2, Result: approval.ResultFailed, Finished: at.Add(time.Hour)},
		{ID: 1, Revision: c1, Result: approval.ResultSucceeded, Finished: at, Approver: "maria", Manifest: &approval.Manifest{Services: web}},
	}
	ranC1 := &prbot.Ran{When: at, Approver: "maria", Services: web, HistoryID: "1"}
	tests := []struct {
		name    string
		entries []approval.Entry
		to      string
		wantRev string
		wantRan *prbot.Ran
		wantErr string
		unknown bool
	}{
		{name: "previous: what ran before the newest apply", entries: entries, to: "previous", wantRev: c1, wantRan: ranC1},
		{name: "previous without an earlier apply: git's", entries: entries[:1], to: "previous"},
		{name: "a history id", entries: entries, to: "1", wantRev: c1, wantRan: ranC1},
		{name: "a history id with #", entries: entries, to: "#1", wantRev: c1, wantRan: ranC1},
		{name: "an entry that failed", entries: entries, to: "2", unknown: true, wantErr: "history entry 2 of prod was failed (its versions did not stay in the cluster)"},
		{name: "an entry that was rejected", entries: entries, to: "3", unknown: true, wantErr: "history entry 3 of prod was rejected (its versions never ran)"},
		{name: "an id the history does not hold", entries: entries, to: "9", unknown: true, wantErr: "unknown history entry 9 in environment prod"},
		{name: "a revision that ran", entries: entries, to: c1[:7], wantRev: c1[:7], wantRan: ranC1},
		{name: "a revision the history does not know", entries: entries, to: "abcdef0", wantRev: "abcdef0"},
		{name: "a revision that only failed", entries: entries, to: c2[:7], wantRev: c2[:7]},
		{name: "seven digits are a revision, not an id", entries: entries, to: "1234567", wantRev: "1234567"},
		{name: "upper-case hex", entries: entries, to: "ABCDEF0", unknown: true, wantErr: `"ABCDEF0": want previous`},
		{name: "a branch name", entries: entries, to: "main", unknown: true, wantErr: `"main": want previous`},
		{name: "empty", entries: entries, to: "", unknown: true, wantErr: `"": want previous`},
		{name: "twenty digits are a revision", entries: entries, to: "99999999999999999999", wantRev: "99999999999999999999"},
		{name: "longer than a revision", entries: entries, to: c1 + "a", unknown: true, wantErr: "want previous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev, ran, err := Target(tt.entries, "prod", tt.to)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Target(%q) error = %v, want one saying %q", tt.to, err, tt.wantErr)
				}
				if tt.unknown != errors.Is(err, api.ErrUnknownRollbackTarget) {
					t.Errorf("Target(%q) error %v: unknown target = %v, want %v", tt.to, err, !tt.unknown, tt.unknown)
				}
				return
			}
			if err != nil {
				t.Fatalf("Target(%q): %v", tt.to, err)
			}
			if rev != tt.wantRev {
				t.Errorf("Target(%q) revision = %q, want %q", tt.to, rev, tt.wantRev)
			}
			if diff := cmp.Diff(tt.wantRan, ran); diff != "" {
				t.Errorf("Target(%q) ran (-want +got):\n%s", tt.to, diff)
			}
		})
	}
}
