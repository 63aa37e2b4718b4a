package release

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestStale: a decision taken on this process's clock before the release
// approval of its plan began to wait here was for the plan before its
// deployment (StaleFor for the worker, TakenBefore for the daemon's other
// goroutines); one handed over (zero time), one taken after, one on a plan
// awaiting approval or on another plan is not stale. It starts nothing.
func TestStale(t *testing.T) {
	since := time.Now()
	rl := New(Config{Room: pass.Room{Env: "prod"}})
	rl.releaseHash, rl.releaseSince = "sha256:r", since
	rl.waitMark.Store(&releaseMark{planHash: "sha256:r", since: since})
	release := &approval.Pending{PlanHash: "sha256:r", Release: true}
	for _, tc := range []struct {
		name string
		p    *approval.Pending
		at   time.Time
		want bool
	}{
		{"taken before the wait began", release, since.Add(-time.Millisecond), true},
		{"taken after", release, since.Add(time.Millisecond), false},
		{"handed over", release, time.Time{}, false},
		{"a plan awaiting approval", &approval.Pending{PlanHash: "sha256:r"}, since.Add(-time.Millisecond), false},
		{"another plan's release", &approval.Pending{PlanHash: "sha256:o", Release: true}, since.Add(-time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rl.StaleFor(tc.p, tc.at); got != tc.want {
				t.Errorf("StaleFor = %v, want %v", got, tc.want)
			}
			if got := rl.TakenBefore(tc.p, tc.at); got != tc.want {
				t.Errorf("TakenBefore = %v, want %v", got, tc.want)
			}
		})
	}
	if got := rl.Since(); !got.Equal(since) {
		t.Errorf("Since = %v, want %v", got, since)
	}
	if New(Config{}).TakenBefore(release, since) {
		t.Error("TakenBefore with no wait begun here = true, want false")
	}
}

// TestInFlightProposal: the apply waiting for its release is proposed with
// the pending release's plan when there is one, else with the in-flight
// record's planHash and changes; changes that cannot be read say so. It
// starts nothing.
func TestInFlightProposal(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	s := gitsource.Snapshot{Revision: "r2", Time: at}
	change := reconcile.Change{Service: "web", Target: "eu", Namespace: "apps", Kind: "Deployment", Name: "web", Container: "app", To: "web:2"}
	changes, err := json.Marshal([]reconcile.Change{change})
	if err != nil {
		t.Fatal(err)
	}
	pendingPlan := &reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:f", Unchanged: 3}
	raw, err := json.Marshal(pendingPlan)
	if err != nil {
		t.Fatal(err)
	}
	f := &approval.InFlight{Revision: "r1", PlanHash: "sha256:f", Changes: changes}
	for _, tc := range []struct {
		name    string
		st      state.EnvState
		want    *reconcile.Plan
		wantErr bool
	}{
		{"the pending release's plan", state.EnvState{InFlight: f, Pending: &approval.Pending{PlanHash: "sha256:f", Release: true, Plan: raw}}, pendingPlan, false},
		{"the in-flight record's", state.EnvState{InFlight: f},
			&reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:f", Changes: []reconcile.Change{change}}, false},
		{"a plan pending is not the release's", state.EnvState{InFlight: f, Pending: &approval.Pending{PlanHash: "sha256:f", Plan: raw}},
			&reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:f", Changes: []reconcile.Change{change}}, false},
		{"unreadable changes", state.EnvState{InFlight: &approval.InFlight{Revision: "r1", PlanHash: "sha256:f", Changes: json.RawMessage(`{`)}},
			&reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:f"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prop, err := inFlightProposal("prod", s, &tc.st)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want one: %v", err, tc.wantErr)
			}
			if prop.Environment != "prod" || prop.Revision != "r1" || !prop.RevisionTime.Equal(at) {
				t.Errorf("proposal %s at %s (%v), want prod at r1 (%v)", prop.Environment, prop.Revision, prop.RevisionTime, at)
			}
			if diff := cmp.Diff(tc.want, prop.Plan); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
