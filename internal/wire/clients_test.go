package wire_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

const kubeconfig = `apiVersion: v1
kind: Config
current-context: one
clusters:
- name: one
  cluster: {server: "https://one.example.com:6443"}
- name: two
  cluster: {server: "https://two.example.com:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: one
  context: {cluster: one, user: u}
- name: two
  context: {cluster: two, user: u}
`

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newClients(t *testing.T, opts ...wire.Option) *wire.Clients {
	t.Helper()
	c, err := wire.NewClients(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// settings is what every client of every command shares.
type settings struct {
	Host, ContentType, Accept, UserAgent string
	QPS                                  float32
	Burst                                int
}

func settingsOf(rc *rest.Config) settings {
	return settings{Host: rc.Host, ContentType: rc.ContentType, Accept: rc.AcceptContentTypes, UserAgent: rc.UserAgent, QPS: rc.QPS, Burst: rc.Burst}
}

func TestRESTConfigContexts(t *testing.T) {
	path := writeKubeconfig(t)
	c := newClients(t)
	for ctx, want := range map[string]string{"": "https://one.example.com:6443", "two": "https://two.example.com:6443"} {
		rc, err := c.RESTConfig(path, ctx)
		if err != nil {
			t.Fatalf("RESTConfig(%q): %v", ctx, err)
		}
		if rc.Host != want {
			t.Errorf("context %q: host %s, want %s", ctx, rc.Host, want)
		}
	}
	if _, err := c.RESTConfig(path, "three"); err == nil {
		t.Errorf("RESTConfig with an unknown context: no error")
	}
}

// TestPlanAndRunShareClientSettings: `reconciler plan`/`apply` build their
// clients with NewClients(), `reconciler run` (the daemon) with NewClients()
// too, or NewClients(WithRESTConfig(rc)) when told its cluster: every way
// ends with the same content type, rate limit and user agent.
func TestPlanAndRunShareClientSettings(t *testing.T) {
	path := writeKubeconfig(t)
	want := settings{
		Host:        "https://one.example.com:6443",
		ContentType: "application/vnd.kubernetes.protobuf",
		Accept:      "application/vnd.kubernetes.protobuf,application/json",
		UserAgent:   "stagehand",
		QPS:         -1,
		Burst:       0,
	}
	plan, err := newClients(t).RESTConfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, settingsOf(plan)); diff != "" {
		t.Errorf("plan's client settings (-want +got):\n%s", diff)
	}
	given := &rest.Config{Host: "https://one.example.com:6443", QPS: 50, Burst: 100, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	run, err := newClients(t, wire.WithRESTConfig(given)).RESTConfig("/elsewhere/kubeconfig", "ignored")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(settingsOf(plan), settingsOf(run)); diff != "" {
		t.Errorf("run's client settings differ from plan's (-plan +run):\n%s", diff)
	}
	if given.QPS != 50 || given.ContentType != "application/json" {
		t.Errorf("WithRESTConfig changed the caller's config: %+v", settingsOf(given))
	}
}

func TestRateLimitOption(t *testing.T) {
	rc, err := newClients(t, wire.WithRateLimit(20, 40)).RESTConfig(writeKubeconfig(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if rc.QPS != 20 || rc.Burst != 40 {
		t.Errorf("qps, burst = %v, %d; want 20, 40", rc.QPS, rc.Burst)
	}
	for _, tt := range []struct {
		name string
		opt  wire.Option
	}{
		{name: "negative burst", opt: wire.WithRateLimit(10, -1)},
		{name: "qps without burst", opt: wire.WithRateLimit(10, 0)},
		{name: "nil rest config", opt: wire.WithRESTConfig(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := wire.NewClients(tt.opt); err == nil {
				t.Errorf("NewClients: no error")
			}
		})
	}
}

func TestTargetsShareClientsPerContext(t *testing.T) {
	path := writeKubeconfig(t)
	cfg := &config.Config{Environments: map[string]config.Environment{"prod": {Targets: []config.Target{
		{Name: "a", Kubeconfig: path, Namespace: "apps-a"},
		{Name: "b", Kubeconfig: path, Namespace: "apps-b"},
		{Name: "c", Kubeconfig: path, Context: "two", Namespace: "apps-a"},
	}}}}
	targets, err := newClients(t).Targets(cfg, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range targets {
		names = append(names, tg.Name+"/"+tg.Namespace)
	}
	if diff := cmp.Diff([]string{"a/apps-a", "b/apps-b", "c/apps-a"}, names); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if targets[0].Client != targets[1].Client {
		t.Errorf("targets on the same kubeconfig and context got different clients")
	}
	if targets[0].Client == targets[2].Client {
		t.Errorf("targets on different contexts share a client")
	}
	if targets[0].Recorder != nil {
		t.Errorf("recorder set without Recorders")
	}
}

// TestTargetsDynamicWithRollouts: only an environment that sets rollouts
// gets dynamic clients (the workload kinds served by a CRD, Argo Rollouts'
// Rollouts, are read through them), shared per kubeconfig and context.
func TestTargetsDynamicWithRollouts(t *testing.T) {
	path := writeKubeconfig(t)
	two := []config.Target{{Name: "a", Kubeconfig: path, Namespace: "apps-a"}, {Name: "b", Kubeconfig: path, Namespace: "apps-b"}}
	cfg := &config.Config{Environments: map[string]config.Environment{
		"plain": {Targets: two},
		"argo":  {Targets: two, Rollouts: &config.Rollouts{Promote: config.RolloutsPromoteAuto}},
	}}
	c := newClients(t)
	plain, err := c.Targets(cfg, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	argo, err := c.Targets(cfg, "argo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].Dynamic != nil || plain[1].Dynamic != nil {
		t.Errorf("an environment without rollouts got a dynamic client")
	}
	if argo[0].Dynamic == nil || argo[0].Dynamic != argo[1].Dynamic {
		t.Errorf("the targets of an environment with rollouts: dynamic clients %v, %v; want one, shared", argo[0].Dynamic, argo[1].Dynamic)
	}
}

func TestTargetsErrorsNameTheKey(t *testing.T) {
	cfg := &config.Config{Environments: map[string]config.Environment{"prod": {Targets: []config.Target{
		{Name: "a", Kubeconfig: writeKubeconfig(t), Namespace: "apps"},
		{Name: "b", Kubeconfig: writeKubeconfig(t), Context: "nope", Namespace: "apps"},
	}}}}
	for _, tt := range []struct{ name, env, want string }{
		{name: "bad context", env: "prod", want: "environments.prod.targets[1]: loading kubeconfig"},
		{name: "unknown environment", env: "qa", want: "environments.qa: not configured; configured: [prod]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newClients(t).Targets(cfg, tt.env, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
