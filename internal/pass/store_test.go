package pass

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/meter/metertest"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestPendingGaugeFollowsThePhase: the gauge a worker's store sets from a
// state seen is 1 exactly while the state waits for a person.
func TestPendingGaugeFollowsThePhase(t *testing.T) {
	m := meter.New(nil)
	s := Observed(nil, m, "prod")
	for _, tc := range []struct {
		phase status.Phase
		want  float64
	}{
		{status.PhaseIdle, 0}, {status.PhaseAwaitingApproval, 1}, {status.PhaseApplying, 0}, {status.PhaseVerifying, 0},
		{status.PhaseAwaitingRelease, 1}, {status.PhaseRollingBack, 0}, {status.PhaseFailed, 0}, {"", 0},
	} {
		s.seen(&state.EnvState{Phase: tc.phase})
		if got := metertest.Value(t, m, "stagehand_pending_approvals", "environment=prod"); got != tc.want {
			t.Errorf("phase %q: stagehand_pending_approvals = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

// TestPendingGaugeSetOnce: only the worker's store (store.go) sets
// stagehand_pending_approvals; no step sets it beside the state it writes,
// in the daemon or in the rooms that hold its steps.
func TestPendingGaugeSetOnce(t *testing.T) {
	var setters []string
	for _, dir := range []string{".", "../daemon", "../deploy", "../release", "../gate"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("%s holds no Go file", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), ".SetPending(") {
				setters = append(setters, filepath.ToSlash(f))
			}
		}
	}
	if diff := cmp.Diff([]string{"store.go"}, setters); diff != "" {
		t.Errorf("files setting the pending gauge (-want +got):\n%s", diff)
	}
}

// pendingSince is the metric of when the plan waiting for a person was proposed.
const pendingSince = "stagehand_pending_approval_timestamp_seconds"

// TestPendingSinceFollowsThePhase: stagehand_pending_approval_timestamp_seconds
// is the pending plan's (or release's) proposal time exactly while the state
// waits for a person, and absent otherwise.
func TestPendingSinceFollowsThePhase(t *testing.T) {
	m := meter.New(nil)
	s := Observed(nil, m, "prod")
	at := time.Date(2026, 11, 29, 3, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		phase   status.Phase
		pending *approval.Pending
		want    float64 // -1: no series
	}{
		{status.PhaseAwaitingApproval, &approval.Pending{ProposedAt: at}, float64(at.UnixNano()) / 1e9},
		{status.PhaseApplying, nil, -1},
		{status.PhaseAwaitingRelease, &approval.Pending{ProposedAt: at.Add(time.Hour), Release: true}, float64(at.Add(time.Hour).UnixNano()) / 1e9},
		{status.PhaseIdle, nil, -1},
		// A pending plan kept while a deploy window defers it is not a person's to decide.
		{status.PhaseIdle, &approval.Pending{ProposedAt: at}, -1},
	} {
		s.seen(&state.EnvState{Phase: tc.phase, Pending: tc.pending})
		got := -1.0
		if metertest.Count(t, m, pendingSince) == 1 {
			got = metertest.Value(t, m, pendingSince, "environment=prod")
		}
		if got != tc.want {
			t.Errorf("phase %q: stagehand_pending_approval_timestamp_seconds = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

// TestPendingSinceDroppedWithTheLease: a replica that stops holding an
// environment (or stops leading) drops its pending approval's timestamp: the
// next holder shows it, and a plan approved there does not stay pending
// here.
func TestPendingSinceDroppedWithTheLease(t *testing.T) {
	m := meter.New(nil)
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for _, env := range []string{"devel", "prod"} {
		m.Leadership(env, true)
		Observed(nil, m, env).seen(&state.EnvState{Phase: status.PhaseAwaitingApproval, Pending: &approval.Pending{ProposedAt: at}})
	}
	m.Leadership("prod", false)
	if got := metertest.Count(t, m, pendingSince); got != 1 || metertest.Value(t, m, pendingSince, "environment=devel") == 0 {
		t.Errorf("after prod's Lease was lost: %d series, want devel's only", got)
	}
	m.SetLeader(false)
	if got := metertest.Count(t, m, pendingSince); got != 0 {
		t.Errorf("after leading stopped: %d series, want none", got)
	}
}
