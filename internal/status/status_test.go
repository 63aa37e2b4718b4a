package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestStatusImages: every service shows desired against live per target, from the plan alone: a change's
// From and To, the manifest's image for a service in sync, and no live image where a problem hides it.
func TestStatusImages(t *testing.T) {
	const reg = "registry.example.com/acme/"
	digest := "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	envM := &manifest.Environment{Name: "prod", Services: []manifest.Service{
		{Name: "web", Containers: []manifest.Container{{DockerName: "web", DockerTag: "1.1.0"}, {DockerName: "web-sidecar", DockerTag: "2.0.0"}}},
		{Name: "api", Containers: []manifest.Container{{DockerName: "api", DockerTag: "3.0.0", DockerDigest: digest}}},
		{Name: "jobs", Containers: []manifest.Container{{DockerName: "jobs", DockerTag: "1.0.0"}}},
	}}
	change := reconcile.Change{Service: "web", Target: "a", Kind: "Deployment", Name: "web", Container: "web",
		From: reg + "web:1.0.0", To: reg + "web:1.1.0"}
	plan := &reconcile.Plan{PlanHash: "sha256:plan",
		Changes:  []reconcile.Change{change},
		Blocked:  []reconcile.Blocked{{Change: reconcile.Change{Service: "web", Target: "b", Kind: "StatefulSet", Name: "web", Container: "web", From: reg + "web:0.9.0", To: reg + "web:1.1.0"}, Locks: []string{"locked"}}},
		Problems: []reconcile.Problem{{Service: "jobs", Target: "a", Message: "no workload"}},
	}
	targets := []config.Target{{Name: "a", Namespace: "ns-a"}, {Name: "b", Namespace: "ns-b"}}
	st := Observe(gitsource.Snapshot{Revision: "abc"}, Planned{Env: envM, Plan: plan}, targets)

	got := map[string][]Image{}
	for _, sv := range st.Services {
		for _, ts := range sv.Targets {
			got[sv.Name+"@"+ts.Target+" "+ts.State] = ts.Images
		}
	}
	sidecar := Image{DockerName: "web-sidecar", Desired: "web-sidecar:2.0.0", Live: "web-sidecar:2.0.0"}
	want := map[string][]Image{
		"web@a out-of-sync": {{DockerName: "web", Workload: "Deployment/web", Desired: reg + "web:1.1.0", Live: reg + "web:1.0.0"}, sidecar},
		"web@b blocked":     {{DockerName: "web", Workload: "StatefulSet/web", Desired: reg + "web:1.1.0", Live: reg + "web:0.9.0"}, sidecar},
		"api@a in-sync":     {{DockerName: "api", Desired: "api:3.0.0@" + digest, Live: "api:3.0.0@" + digest}},
		"api@b in-sync":     {{DockerName: "api", Desired: "api:3.0.0@" + digest, Live: "api:3.0.0@" + digest}},
		"jobs@a problem":    {{DockerName: "jobs", Desired: "jobs:1.0.0"}},
		"jobs@b in-sync":    {{DockerName: "jobs", Desired: "jobs:1.0.0", Live: "jobs:1.0.0"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images per service@target state (-want +got):\n%s", diff)
	}
}

func TestRepository(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"web", "web"},
		{"web:1.0", "web"},
		{"localhost:5000/team/web:1.0@sha256:ab", "localhost:5000/team/web"},
		{"localhost:5000/team/web", "localhost:5000/team/web"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			if got := repository(tc.ref); got != tc.want {
				t.Errorf("repository(%q) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}
