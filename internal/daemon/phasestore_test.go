package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestPendingGaugeFollowsThePhase: the gauge a worker's store sets from a
// state seen is 1 exactly while the state waits for a person.
func TestPendingGaugeFollowsThePhase(t *testing.T) {
	m := meter.New(nil)
	s := observed(nil, m, "prod")
	for _, tc := range []struct {
		phase status.Phase
		want  float64
	}{
		{status.PhaseIdle, 0}, {status.PhaseAwaitingApproval, 1}, {status.PhaseApplying, 0}, {status.PhaseVerifying, 0},
		{status.PhaseAwaitingRelease, 1}, {status.PhaseRollingBack, 0}, {status.PhaseFailed, 0}, {"", 0},
	} {
		s.seen(&state.EnvState{Phase: tc.phase})
		if got := metricValue(t, m, "stagehand_pending_approvals", "environment=prod"); got != tc.want {
			t.Errorf("phase %q: stagehand_pending_approvals = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

// TestPendingGaugeSetOnce: only the worker's store (phasestore.go) sets
// stagehand_pending_approvals; no step sets it beside the state it writes.
func TestPendingGaugeSetOnce(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var setters []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), ".SetPending(") {
			setters = append(setters, f)
		}
	}
	if diff := cmp.Diff([]string{"phasestore.go"}, setters); diff != "" {
		t.Errorf("files setting the pending gauge (-want +got):\n%s", diff)
	}
}
