package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestPlanMapsEveryKind covers every workload kind, init containers,
// multi-container pods, the name fallback, missing and ambiguous mappings
// and unmanaged workloads in one namespace.
func TestPlanMapsEveryKind(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c := env.Clientset
	createDeployment(t, c, ns, "api", "api", 1, pod{
		inits:      [][2]string{{"migrate", "reg.example.com/team/api-migrate:1.0"}},
		containers: [][2]string{{"app", "reg.example.com/team/api:1.0"}, {"envoy", "envoyproxy/envoy:v1.30"}},
	})
	createStatefulSet(t, c, ns, "db", "db", 1, pod{containers: [][2]string{{"db", "reg.example.com:5000/db:15"}}})
	createDaemonSet(t, c, ns, "agent", "", pod{containers: [][2]string{{"agent", "agent:3"}}}) // name fallback
	createCronJob(t, c, ns, "report", "report", pod{containers: [][2]string{{"report", "reg.example.com/report:1"}}})
	createDeployment(t, c, ns, "twin", "twin", 1, pod{containers: [][2]string{{"a", "reg.example.com/twin:1"}, {"b", "reg.example.com/twin:1"}}})
	createDeployment(t, c, ns, "same", "same", 1, pod{containers: [][2]string{{"same", "reg.example.com/same:7"}}})
	createDeployment(t, c, ns, "legacy", "retired", 1, pod{containers: [][2]string{{"legacy", "legacy:1"}}})

	e := environment(
		svc("api", [3]string{"team/api", "2.0", ""}, [3]string{"api-migrate", "2.0", ""}),
		svc("db", [3]string{"", "16", ""}),
		svc("agent", [3]string{"agent", "4", ""}),
		svc("report", [3]string{"report", "2", ""}),
		svc("twin", [3]string{"twin", "2", ""}),
		svc("same", [3]string{"same", "7", ""}),
		svc("ghost", [3]string{"ghost", "1", ""}),
		svc("api-extra", [3]string{"nothing-like-it", "1", ""}),
		svc("no-containers"),
	)
	createDeployment(t, c, ns, "api-extra", "api-extra", 1, pod{containers: [][2]string{{"x", "reg.example.com/other:1"}}})

	r := newReconciler(t)
	got := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "abc123", Targets: []reconcile.Target{target(t, "a", ns)}})

	ch := func(service, kind, name, container, from, to string) reconcile.Change {
		return reconcile.Change{Service: service, Target: "a", Namespace: ns, Kind: kind, Name: name, Container: container, From: from, To: to}
	}
	want := &reconcile.Plan{
		Environment: "test",
		Revision:    "abc123",
		Changes: []reconcile.Change{
			ch("report", "CronJob", "report", "report", "reg.example.com/report:1", "reg.example.com/report:2"),
			ch("agent", "DaemonSet", "agent", "agent", "agent:3", "agent:4"),
			ch("api", "Deployment", "api", "app", "reg.example.com/team/api:1.0", "reg.example.com/team/api:2.0"),
			ch("api", "Deployment", "api", "init:migrate", "reg.example.com/team/api-migrate:1.0", "reg.example.com/team/api-migrate:2.0"),
			ch("db", "StatefulSet", "db", "db", "reg.example.com:5000/db:15", "reg.example.com:5000/db:16"),
		},
		Blocked: []reconcile.Blocked{},
		Problems: []reconcile.Problem{
			{Service: "api-extra", Target: "a", Message: "no container whose image repository is or ends with /nothing-like-it in Deployment/api-extra (namespace " + ns + ")"},
			{Service: "ghost", Target: "a", Message: "no Deployment, StatefulSet, DaemonSet or CronJob labelled app.kubernetes.io/name=ghost or named ghost in namespace " + ns},
			{Service: "twin", Target: "a", Message: "ambiguous image twin: containers a, b of Deployment " + ns + "/twin all match"},
		},
		Unmanaged: []reconcile.Unmanaged{{Target: "a", Namespace: ns, Kind: "Deployment", Name: "legacy", Service: "retired"}},
		Unchanged: 1,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(reconcile.Plan{}, "PlanHash")); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if got.PlanHash != reconcile.Hash(want.Environment, want.Revision, want.Changes) {
		t.Errorf("PlanHash = %s, want the hash of environment, revision and changes %s", got.PlanHash, reconcile.Hash(want.Environment, want.Revision, want.Changes))
	}
}

// TestPlanTwoTargets plans one environment against two namespaces that run
// different versions, and checks the hash does not depend on target order.
func TestPlanTwoTargets(t *testing.T) {
	env := cluster.Env(t)
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	createDeployment(t, env.Clientset, nsA, "web", "web", 1, pod{containers: [][2]string{{"web", "eu.reg.example.com/web:1"}}})
	createDeployment(t, env.Clientset, nsB, "web", "web", 1, pod{containers: [][2]string{{"web", "us.reg.example.com/web:2"}}})
	e := environment(svc("web", [3]string{"web", "2", ""}))
	r := newReconciler(t)

	ab := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r1", Targets: []reconcile.Target{target(t, "a", nsA), target(t, "b", nsB)}})
	ba := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r1", Targets: []reconcile.Target{target(t, "b", nsB), target(t, "a", nsA)}})
	want := []reconcile.Change{{Service: "web", Target: "a", Namespace: nsA, Kind: "Deployment", Name: "web", Container: "web",
		From: "eu.reg.example.com/web:1", To: "eu.reg.example.com/web:2"}}
	if diff := cmp.Diff(want, ab.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if ab.Unchanged != 1 {
		t.Errorf("Unchanged = %d, want 1 (target b already runs web:2)", ab.Unchanged)
	}
	if ab.PlanHash != ba.PlanHash {
		t.Errorf("planHash depends on target order: %s vs %s", ab.PlanHash, ba.PlanHash)
	}

	t.Run("one list per kind per target", func(t *testing.T) {
		cnt := &counter{n: map[string]int{}}
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(cnt.wrap)
		cs := kubernetes.NewForConfigOrDie(cfg)
		many := environment()
		for i := range 50 {
			many.Services = append(many.Services, svc(fmt.Sprintf("svc-%d", i), [3]string{"x", "1", ""}))
		}
		many.Services = append(many.Services, e.Services...)
		ta, tb := target(t, "a", nsA), target(t, "b", nsB)
		ta.Client, tb.Client = cs, cs
		mustPlan(t, r, reconcile.Request{Environment: many, Revision: "r1", Targets: []reconcile.Target{ta, tb}})
		want := map[string]int{"GET cronjobs": 2, "GET daemonsets": 2, "GET deployments": 2, "GET statefulsets": 2}
		if diff := cmp.Diff(want, cnt.reset()); diff != "" {
			t.Errorf("API requests for a 51-service plan on two targets (-want +got):\n%s", diff)
		}
	})

	t.Run("apply to both targets", func(t *testing.T) {
		r := newReconciler(t, reconcile.WithRolloutTimeout(60*time.Second))
		req := reconcile.Request{Environment: e, Revision: "r1", Targets: []reconcile.Target{target(t, "a", nsA), target(t, "b", nsB)}}
		res, err := r.Apply(context.Background(), req, ab.PlanHash)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Workloads) != 1 || res.Workloads[0].Outcome != reconcile.OutcomeSucceeded {
			t.Fatalf("workloads %+v; want web in target a succeeded", res.Workloads)
		}
		for _, ns := range []string{nsA, nsB} {
			if _, c := deploymentImages(t, ns, "web"); !strings.HasSuffix(c[0], "/web:2") {
				t.Errorf("namespace %s runs %s, want web:2", ns, c[0])
			}
		}
	})
}

// TestPlanSelectorLabel maps services by a configured label key; the default
// key then means nothing, and two manifest containers that match the same
// pod container are ambiguous.
func TestPlanSelectorLabel(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	relabel := func(service string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Labels = map[string]string{"acme.com/service": service} }
	}
	createDeployment(t, env.Clientset, ns, "web-v2", "", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}}, relabel("web"))
	createDeployment(t, env.Clientset, ns, "old", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}}) // default key only
	createDeployment(t, env.Clientset, ns, "pair", "", 0, pod{containers: [][2]string{{"app", "reg.example.com/team/pair:1"}}}, relabel("pair"))
	e := environment(
		svc("web", [3]string{"web", "2", ""}),
		svc("pair", [3]string{"team/pair", "2", ""}, [3]string{"pair", "3", ""}),
	)
	r := newReconciler(t, reconcile.WithSelectorLabel("acme.com/service"))
	p := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}})
	want := []reconcile.Change{{Service: "web", Target: "a", Namespace: ns, Kind: "Deployment", Name: "web-v2", Container: "web",
		From: "reg.example.com/web:1", To: "reg.example.com/web:2"}}
	if diff := cmp.Diff(want, p.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantProblems := []reconcile.Problem{{Service: "pair", Target: "a",
		Message: "ambiguous image: container app of Deployment " + ns + "/pair matches both team/pair and pair"}}
	if diff := cmp.Diff(wantProblems, p.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(p.Unmanaged) != 0 {
		t.Errorf("unmanaged %v; the default label key is not the selector here", p.Unmanaged)
	}
	if _, err := reconcile.New(reconcile.WithSelectorLabel("not a label")); err == nil {
		t.Errorf("New accepted selector label %q", "not a label")
	}
}
