package approval

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

func TestPinApply(t *testing.T) {
	pin := Pin{PR: 7, Services: []manifest.Service{
		{Name: "web", Version: "1.0.0", Containers: []manifest.Container{{DockerName: "web", DockerTag: "1.0.0"}, {DockerName: "worker", DockerTag: "1.0.0", DockerDigest: "sha256:aa"}}},
		{Name: "gone", Containers: []manifest.Container{{DockerTag: "9"}}},
	}}
	env := func(webVersion, webTag, workerTag, workerDigest string) *manifest.Environment {
		return &manifest.Environment{Name: "prod", Services: []manifest.Service{
			{Name: "web", Version: webVersion, Source: "web.json", Containers: []manifest.Container{{DockerTag: webTag}, {DockerName: "worker", DockerTag: workerTag, DockerDigest: workerDigest}, {DockerName: "sidecar", DockerTag: "5"}}},
			{Name: "api", Source: "api.json", Containers: []manifest.Container{{DockerTag: "3"}}},
		}}
	}
	tests := []struct {
		name     string
		git      [4]string
		want     *manifest.Environment
		caughtUp bool
	}{
		{"git newer: pinned versions win, the rest follows git", [4]string{"2.0.0", "2.0.0", "2.0.0", ""}, env("1.0.0", "1.0.0", "1.0.0", "sha256:aa"), false},
		{"git says the pin: caught up", [4]string{"1.0.0", "1.0.0", "1.0.0", "sha256:aa"}, env("1.0.0", "1.0.0", "1.0.0", "sha256:aa"), true},
		{"one container still differs", [4]string{"1.0.0", "1.0.0", "1.0.0", ""}, env("1.0.0", "1.0.0", "1.0.0", "sha256:aa"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := env(tt.git[0], tt.git[1], tt.git[2], tt.git[3])
			got, caughtUp := pin.Apply(git)
			if diff := cmp.Diff(tt.want, got); diff != "" || caughtUp != tt.caughtUp {
				t.Errorf("Apply (-want +got):\n%s\ncaughtUp %v, want %v", diff, caughtUp, tt.caughtUp)
			}
			if diff := cmp.Diff(env(tt.git[0], tt.git[1], tt.git[2], tt.git[3]), git); diff != "" {
				t.Errorf("Apply changed its input (-before +after):\n%s", diff)
			}
		})
	}
	if got := pin.Message(); got != "pinned by rollback #7" {
		t.Errorf("Message() = %q", got)
	}
}

// A change merged after the pin (git moves a pinned container to a third
// tag, neither pinned nor replaced) is applied: that container follows git,
// and once every pinned one has caught up or moved on the pin is done. A
// digest alone (the resolve's) is no move.
func TestPinApplyAfterGitMovedOn(t *testing.T) {
	pin := Pin{PR: 7,
		Services: []manifest.Service{{Name: "web", Version: "1.0.0", Containers: []manifest.Container{{DockerName: "web", DockerTag: "1.0.0"}, {DockerName: "worker", DockerTag: "1.0.0"}}}},
		Replaced: []manifest.Service{{Name: "web", Version: "2.0.0", Containers: []manifest.Container{{DockerName: "web", DockerTag: "2.0.0"}, {DockerName: "worker", DockerTag: "2.0.0"}}}},
	}
	env := func(version, webTag, workerTag, workerDigest string) *manifest.Environment {
		return &manifest.Environment{Name: "prod", Services: []manifest.Service{
			{Name: "web", Version: version, Containers: []manifest.Container{{DockerTag: webTag}, {DockerName: "worker", DockerTag: workerTag, DockerDigest: workerDigest}}},
		}}
	}
	tests := []struct {
		name     string
		git      *manifest.Environment
		want     *manifest.Environment
		caughtUp bool
	}{
		{"git still says what was rolled back from: pinned", env("2.0.0", "2.0.0", "2.0.0", ""), env("1.0.0", "1.0.0", "1.0.0", ""), false},
		{"a digest added to the replaced tag: still pinned", env("2.0.0", "2.0.0", "2.0.0", "sha256:bb"), env("1.0.0", "1.0.0", "1.0.0", ""), false},
		{"one container fixed forward: it follows git, the other stays pinned", env("2.0.0", "2.0.0", "2.0.1", ""), env("1.0.0", "1.0.0", "2.0.1", ""), false},
		{"everything fixed forward: git decides, the pin is done", env("2.0.1", "2.0.1", "2.0.1", ""), env("2.0.1", "2.0.1", "2.0.1", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, caughtUp := pin.Apply(tt.git)
			if diff := cmp.Diff(tt.want, got); diff != "" || caughtUp != tt.caughtUp {
				t.Errorf("Apply (-want +got):\n%s\ncaughtUp %v, want %v", diff, caughtUp, tt.caughtUp)
			}
		})
	}
}

func TestPinForeign(t *testing.T) {
	pin := Pin{PR: 7, Services: []manifest.Service{{Name: "web", Containers: []manifest.Container{{DockerTag: "1.0.0"}}}}}
	ch := func(service, to string) reconcile.Change {
		return reconcile.Change{Service: service, Target: "a", Namespace: "apps", Kind: "Deployment", Name: service, Container: service, To: to}
	}
	for _, tt := range []struct {
		name    string
		changes []reconcile.Change
		want    []reconcile.Change
	}{
		{name: "the pin's change", changes: []reconcile.Change{ch("web", "r.example/web:1.0.0")}},
		{name: "with a digest", changes: []reconcile.Change{ch("web", "r.example/web:1.0.0@sha256:aa")}},
		{name: "a service added since the target rides along",
			changes: []reconcile.Change{ch("web", "r.example/web:1.0.0"), ch("worker", "r.example/worker:0.2.0")},
			want:    []reconcile.Change{ch("worker", "r.example/worker:0.2.0")}},
		{name: "a pinned service to another tag", changes: []reconcile.Change{ch("web", "r.example/web:2.0.0")}, want: []reconcile.Change{ch("web", "r.example/web:2.0.0")}},
		{name: "a registry port is no tag", changes: []reconcile.Change{ch("web", "r.example:1.0.0/web")}, want: []reconcile.Change{ch("web", "r.example:1.0.0/web")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, pin.Foreign(tt.changes)); diff != "" {
				t.Errorf("Foreign (-want +got):\n%s", diff)
			}
		})
	}
	if got, want := DescribeChange(ch("worker", "r.example/worker:0.2.0")), "worker: container worker of Deployment apps/worker in target a → r.example/worker:0.2.0"; got != want {
		t.Errorf("DescribeChange = %q, want %q", got, want)
	}
}
