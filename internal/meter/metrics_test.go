package meter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReportsAndFailures: an environment's Reports set the waiting gauge,
// count the drops, and count a failure under the gate or the state reason;
// Fail counts under the reason given.
func TestReportsAndFailures(t *testing.T) {
	m := New(nil)
	r := m.Reports("prod")
	r.Waiting(3)
	r.Dropped()
	r.Failed(true)
	r.Failed(false)
	m.Fail("prod", ReasonApply)
	got := map[string]float64{
		"waiting": testutil.ToFloat64(m.unreported.WithLabelValues("prod")),
		"dropped": testutil.ToFloat64(m.reportsDropped.WithLabelValues("prod")),
		"gate":    testutil.ToFloat64(m.failures.WithLabelValues("prod", "gate")),
		"state":   testutil.ToFloat64(m.failures.WithLabelValues("prod", "state")),
		"apply":   testutil.ToFloat64(m.failures.WithLabelValues("prod", "apply")),
	}
	want := map[string]float64{"waiting": 3, "dropped": 1, "gate": 1, "state": 1, "apply": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestLeadershipDropsPendingSince: losing an environment's Lease drops its
// pending approval's timestamp (the next holder shows it), and so does
// ceasing to lead, for every environment.
func TestLeadershipDropsPendingSince(t *testing.T) {
	m := New(nil)
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for _, env := range []string{"devel", "prod"} {
		m.Leadership(env, true)
		m.SetPendingSince(env, at)
	}
	m.Leadership("prod", false)
	if got := testutil.CollectAndCount(m.pendingSince); got != 1 {
		t.Errorf("after prod's Lease was lost: %d series, want devel's only", got)
	}
	m.SetLeader(false)
	if got := testutil.CollectAndCount(m.pendingSince); got != 0 {
		t.Errorf("after leading stopped: %d series, want none", got)
	}
}

// TestRevisionAgeOnTheGivenClock: the revision age is measured on the clock
// New was given.
func TestRevisionAgeOnTheGivenClock(t *testing.T) {
	commit := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	m := New(func() time.Time { return commit.Add(90 * time.Second) })
	m.ObserveRevision("prod", commit)
	if got := testutil.ToFloat64(revisionAge{m}); got != 90 {
		t.Errorf("stagehand_revision_age_seconds = %v, want 90", got)
	}
}
