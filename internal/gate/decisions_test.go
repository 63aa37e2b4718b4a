package gate

import (
	"encoding/json"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// webChange is web's container app in target eu set to image to.
func webChange(to string) reconcile.Change {
	return reconcile.Change{Service: "web", Target: "eu", Namespace: "apps", Kind: "Deployment", Name: "web", Container: "app",
		From: "registry.example.com/web:1", To: to}
}

// TestRejected: a plan is never proposed again once rejected at its revision
// with its planHash; another revision or plan is.
func TestRejected(t *testing.T) {
	history := []approval.Entry{
		{Revision: "r2", PlanHash: "sha256:b", Result: approval.ResultSucceeded},
		{Revision: "r1", PlanHash: "sha256:a", Result: approval.ResultRejected},
	}
	for _, tc := range []struct {
		rev, hash string
		want      bool
	}{{"r1", "sha256:a", true}, {"r1", "sha256:c", false}, {"r2", "sha256:a", false}, {"r2", "sha256:b", false}} {
		if got := rejected(history, tc.rev, tc.hash); got != tc.want {
			t.Errorf("rejected(%s, %s) = %v, want %v", tc.rev, tc.hash, got, tc.want)
		}
	}
}

// TestSubset: what is left of an apply continues it only when every change
// was approved: same workload, container and image (the running image may
// differ once part of it landed).
func TestSubset(t *testing.T) {
	whole := []reconcile.Change{webChange("registry.example.com/web:2"), {Service: "db", Target: "eu", Namespace: "apps",
		Kind: "StatefulSet", Name: "db", Container: "db", To: "registry.example.com/db:5"}}
	moved := webChange("registry.example.com/web:2")
	moved.From = "registry.example.com/web:1.5"
	for _, tc := range []struct {
		name string
		part []reconcile.Change
		want bool
	}{
		{"nothing left", nil, true},
		{"one of two", whole[1:], true},
		{"from another image", []reconcile.Change{moved}, true},
		{"another image", []reconcile.Change{webChange("registry.example.com/web:3")}, false},
		{"another container", []reconcile.Change{func() reconcile.Change { c := whole[0]; c.Container = "sidecar"; return c }()}, false},
	} {
		if got := subset(tc.part, whole); got != tc.want {
			t.Errorf("%s: subset = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRejectedAgain: after a rejected release was rolled back, a newer
// revision that deploys nothing but what was rejected is not applied; one
// that changes something else, or after a failed rollout, is.
func TestRejectedAgain(t *testing.T) {
	rejectedChanges, err := json.Marshal([]reconcile.Change{webChange("registry.example.com/web:2")})
	if err != nil {
		t.Fatal(err)
	}
	st := func(cause string) *state.EnvState {
		return &state.EnvState{Failed: &approval.RolledBack{Revision: "r1", EntryID: 5, Cause: cause},
			History: []approval.Entry{{ID: 5, Revision: "r1", Changes: rejectedChanges, Result: approval.ResultRolledBack}}}
	}
	same := &reconcile.Plan{Revision: "r2", Changes: []reconcile.Change{webChange("registry.example.com/web:2")}}
	other := &reconcile.Plan{Revision: "r2", Changes: []reconcile.Change{webChange("registry.example.com/web:3")}}
	for _, tc := range []struct {
		name string
		st   *state.EnvState
		plan *reconcile.Plan
		want bool
	}{
		{"release rejected, the same change", st("release rejected by github:bob: no"), same, true},
		{"release rejected, another change", st("release rejected by github:bob: no"), other, false},
		{"rollout failed, the same change", st("rollout failed: web stuck"), same, false},
		{"nothing rolled back", &state.EnvState{}, same, false},
		{"nothing to apply", st("release rejected by github:bob"), &reconcile.Plan{}, false},
	} {
		if got := rejectedAgain(tc.st, tc.plan); got != tc.want {
			t.Errorf("%s: rejectedAgain = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPinnedBy: a plan made of the pin's changes alone is applied as the
// person who rolled back; any other change, or no pin, is not.
func TestPinnedBy(t *testing.T) {
	pin := &approval.Pin{By: "token:alice", Services: []manifest.Service{{Name: "web", Version: "1",
		Containers: []manifest.Container{{DockerName: "web", DockerTag: "1"}}}}}
	back := &reconcile.Plan{Changes: []reconcile.Change{webChange("registry.example.com/web:1")}}
	forward := &reconcile.Plan{Changes: []reconcile.Change{webChange("registry.example.com/web:1"), webChange("registry.example.com/web:3")}}
	for _, tc := range []struct {
		name string
		pin  *approval.Pin
		plan *reconcile.Plan
		want string
	}{
		{"the pin's changes", pin, back, "token:alice"},
		{"and another", pin, forward, ""},
		{"no pin", nil, back, ""},
		{"nothing to apply", pin, &reconcile.Plan{}, ""},
	} {
		if got := pinnedBy(tc.pin, tc.plan); got != tc.want {
			t.Errorf("%s: pinnedBy = %q, want %q", tc.name, got, tc.want)
		}
	}
}
