package state

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
)

// TestPackHistory: history.json keeps each distinct service, file and layout
// once and reads back what was written; the array written before packing is
// still read; an index out of its table is refused.
func TestPackHistory(t *testing.T) {
	hist := statetest.History(10, 5, true)
	hist = append(hist, approval.Entry{ID: 0, Revision: "old", Result: approval.ResultRejected, Changes: json.RawMessage(`[]`)})
	b, err := packHistory(hist)
	if err != nil {
		t.Fatal(err)
	}
	var p packedHistory
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	// 5 services in the first manifest, then 1 to 5 bumped per entry; 1 layout.
	if len(p.Layouts) != 1 || len(p.Services) >= 10*5 || len(p.Files) != 6 {
		t.Errorf("tables hold %d services, %d files, %d layouts; want each kept once", len(p.Services), len(p.Files), len(p.Layouts))
	}
	got, err := unpackHistory(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hist, got); diff != "" {
		t.Errorf("history read back (-want +got):\n%s", diff)
	}
	plain, _ := json.Marshal(hist)
	if got, err := unpackHistory(plain); err != nil || !cmp.Equal(hist, got) {
		t.Errorf("the array format read back: %v, %s", err, cmp.Diff(hist, got))
	}
	bad := strings.Replace(string(b), `"layout":0`, `"layout":7`, 1)
	if _, err := unpackHistory([]byte(bad)); err == nil || !strings.Contains(err.Error(), "layout 7 of 1") {
		t.Errorf("an index out of its table: %v", err)
	}
}
