package wire_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestRegistryRequestsCounted: the Builder's reconciler sends its registry
// requests through the counted transport, so stagehand_registry_requests_total
// shows what the registry answered: a digest pinned from a registry that
// answers is counted by its 200s; a registry that is down is code=error.
func TestRegistryRequestsCounted(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	one := cluster.Env(t)
	ctx := t.Context()
	up := registrytest.New(t)
	up.Push(t, "team/web", "2")
	downHost := testenv.FreeAddr(t) // nothing listens there

	ns := one.Namespace(t)
	d := webDeployment(ns)
	d.Spec.Template.Spec.Containers[0].Image = up.Host() + "/team/web:1"
	if _, err := one.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	no := false
	cfg := &config.Config{
		Registry:     config.Registry{WorkloadCredentials: &no},
		Locks:        config.Locks{Storage: "memory"},
		State:        config.State{Kubeconfig: one.Kubeconfig, Namespace: ns},
		Environments: map[string]config.Environment{"prod": {LockPath: "apps/prod", Targets: []config.Target{{Name: "a", Namespace: ns, Kubeconfig: one.Kubeconfig}}}},
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t, cfg)
	r, err := b.Reconciler()
	if err != nil {
		t.Fatal(err)
	}
	targets, err := b.Targets("prod")
	if err != nil {
		t.Fatal(err)
	}
	counts := func() map[string]float64 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(b.Collectors()...)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] += m.GetCounter().GetValue()
			}
		}
		return got
	}
	// plan plans web at host/team/web:2, its Deployment running host/team/web:1.
	plan := func(host string) {
		t.Helper()
		d, err := one.Clientset.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = host + "/team/web:1"
		if _, err := one.Clientset.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e := &manifest.Environment{Name: "prod", Root: "environments/prod/manifest.json", Services: []manifest.Service{
			{Name: "web", Containers: []manifest.Container{{DockerName: host + "/team/web", DockerTag: "2"}}}}}
		testenv.WaitFor(t, 30*time.Second, "the plan seeing web on "+host, func() bool {
			p, err := r.Plan(ctx, reconcile.Request{Environment: e, Revision: "r", Targets: targets})
			return err == nil && (len(p.Changes)+len(p.Problems)) > 0 && (len(p.Changes) == 0 || strings.HasPrefix(p.Changes[0].To, host))
		})
	}
	plan(up.Host())
	got := counts()
	if got["200"] < 1 || got["error"] != 0 {
		t.Errorf("after a digest pinned from a registry that answers: %v, want 200s and no error", got)
	}
	plan(downHost)
	after := counts()
	if after["error"] < 1 {
		t.Errorf("after a plan against a registry that is down: %v, want code=error counted", after)
	}
	if diff := cmp.Diff(got["200"], after["200"]); diff != "" {
		t.Errorf("the 200s changed with a registry that is down (-before +after):\n%s", diff)
	}
}
