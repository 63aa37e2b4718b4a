package reconcile_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// countingClient is a client of the test cluster whose requests are counted.
func countingClient(t testing.TB) (kubernetes.Interface, *counter) {
	t.Helper()
	cnt := &counter{n: map[string]int{}}
	clients, err := wire.NewClients(wire.WithWrapTransport(cnt.wrap))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := clients.Client(cluster.Env(t).Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	return cs, cnt
}

// watch runs r.Watch until the test ends.
func watch(t testing.TB, r *reconcile.Reconciler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	for !reconcile.Watching(r) {
		time.Sleep(time.Millisecond)
	}
}

// TestPlanFromWatches: while Watch runs, a plan after the first sends no
// request but the Gets of the one service mapped by name, sees a change made
// behind its back once the watch delivers it, and Apply still plans from
// fresh Lists and waits for the rollout on watch events.
func TestPlanFromWatches(t *testing.T) {
	ctx := context.Background()
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c, cnt := countingClient(t)
	createDeployment(t, env.Clientset, ns, "api", "api", 1, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}}})
	createStatefulSet(t, env.Clientset, ns, "db", "db", 1, pod{containers: [][2]string{{"db", "reg.example.com/db:1"}}})
	createCronJob(t, env.Clientset, ns, "report", "report", pod{containers: [][2]string{{"report", "reg.example.com/report:1"}}})
	createDeployment(t, env.Clientset, ns, "legacy", "", 0, pod{containers: [][2]string{{"app", "reg.example.com/legacy:1"}}}) // unlabelled
	e := environment(svc("api", [3]string{"api", "2", ""}), svc("db", [3]string{"db", "1", ""}), svc("report", [3]string{"report", "1", ""}),
		svc("legacy", [3]string{"legacy", "1", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{{Name: "a", Namespace: ns, Client: c}}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(60*time.Second))
	watch(t, r)

	first := mustPlan(t, r, req)
	t.Logf("first plan (starts the watches): %v", cnt.reset())
	for range 3 {
		again := mustPlan(t, r, req)
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("plans differ (-first +again):\n%s", diff)
		}
	}
	if diff := cmp.Diff(map[string]int{"GET deployments": 3, "GET statefulsets": 3, "GET daemonsets": 3, "GET cronjobs": 3}, cnt.reset()); diff != "" {
		t.Errorf("requests of three plans from the watches (-want +got): only the Gets of the unlabelled service:\n%s", diff)
	}
	if len(first.Changes) != 1 || first.Changes[0].Name != "api" || first.Unchanged != 3 || len(first.Problems) != 0 {
		t.Fatalf("plan: %+v", first)
	}

	// A change behind the reconciler's back reaches the plan through the watch.
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"reg.example.com/db:0"}]}}}}`)
	if _, err := env.Clientset.AppsV1().StatefulSets(ns).Patch(ctx, "db", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var p *reconcile.Plan
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if p = mustPlan(t, r, req); len(p.Changes) == 2 {
			break
		}
	}
	if len(p.Changes) != 2 {
		t.Fatalf("the watch never showed the changed StatefulSet: %+v", p.Changes)
	}
	cnt.reset()
	res, err := r.Apply(ctx, req, p.PlanHash)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Workloads {
		if w.Outcome != reconcile.OutcomeSucceeded {
			t.Errorf("%s: %s: %s", w.Name, w.Outcome, w.Message)
		}
	}
	got := cnt.reset()
	for _, kind := range []string{"deployments", "statefulsets", "daemonsets", "cronjobs"} {
		if got["GET "+kind] != 1 {
			t.Errorf("Apply sent %d GET %s, want 1: the plan again from a fresh List, the rollout wait from the watch (%v)", got["GET "+kind], kind, got)
		}
	}
}

// TestPlanIsolatesUnreachableTarget: of an environment's two targets, one
// whose API server does not answer becomes a problem for each service
// ("unreachable since …") within the target timeout, while the other is
// planned and applied; with and without Watch.
func TestPlanIsolatesUnreachableTarget(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "api", "api", 0, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://127.0.0.1:1" // nothing listens
	down, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := environment(svc("api", [3]string{"api", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{
		{Name: "up", Namespace: ns, Client: env.Clientset}, {Name: "down", Namespace: ns, Client: down}}}
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "lists", true: "watches"}[watched], func(t *testing.T) {
			r := newReconciler(t, reconcile.WithTargetTimeout(3*time.Second), reconcile.WithRolloutTimeout(0))
			if watched {
				watch(t, r)
			}
			start := time.Now()
			p := mustPlan(t, r, req)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("plan took %s, want it bounded by the target timeout", took)
			}
			if len(p.Problems) != 1 || p.Problems[0].Target != "down" || !strings.Contains(p.Problems[0].Message, "target down unreachable since ") {
				t.Errorf("problems %+v, want one: target down unreachable since …", p.Problems)
			}
			if len(p.Changes) != 1 || p.Changes[0].Target != "up" {
				t.Fatalf("changes %+v, want api in target up", p.Changes)
			}
			res, err := r.Apply(context.Background(), req, p.PlanHash)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Workloads) != 1 || res.Workloads[0].Target != "up" || res.Workloads[0].Outcome != reconcile.OutcomePatched {
				t.Errorf("workloads %+v, want api patched in up", res.Workloads)
			}
			// Back to the old image for the next subtest.
			patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"reg.example.com/api:1"}]}}}}`)
			if _, err := env.Clientset.AppsV1().Deployments(ns).Patch(context.Background(), "api", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWatchStopsEveryWatch: once Watch's context ends, Watch returns and
// no informer goroutine is left (goleak-style, by the goroutines' stacks).
func TestWatchStopsEveryWatch(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "api", "api", 0, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}}})
	before := informerGoroutines()
	r := newReconciler(t)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Watch(ctx) }()
	for !reconcile.Watching(r) {
		time.Sleep(time.Millisecond)
	}
	req := reconcile.Request{Environment: environment(svc("api", [3]string{"api", "2", ""})), Revision: "r",
		Targets: []reconcile.Target{target(t, "a", ns), target(t, "b", ns)}}
	mustPlan(t, r, req) // starts the watches of both targets
	if n := informerGoroutines(); n <= before {
		t.Fatalf("%d informer goroutines while watching, %d before", n, before)
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return")
	}
	if n := informerGoroutines(); n > before {
		t.Errorf("%d informer goroutines left after Watch returned, %d before", n, before)
	}
	// Without Watch, Plan lists again.
	if p := mustPlan(t, r, req); len(p.Changes) != 2 {
		t.Errorf("plan after Watch: %+v", p.Changes)
	}
}

func informerGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "k8s.io/client-go/tools/cache.") {
			n++
		}
	}
	return n
}

// TestPlanTargetGoesDown: an environment spans two API servers; once the
// second stops, the watched plan reports its target unreachable within the
// target timeout and still plans the first, and Apply applies the first.
func TestPlanTargetGoesDown(t *testing.T) {
	env := cluster.Env(t)
	second, err := testenv.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	var targets []reconcile.Target
	for i, e := range []*testenv.Env{env, second} {
		ns := e.Namespace(t)
		createDeployment(t, e.Clientset, ns, "api", "api", 0, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}}})
		targets = append(targets, reconcile.Target{Name: fmt.Sprintf("t%d", i), Namespace: ns, Client: e.Clientset})
	}
	req := reconcile.Request{Environment: environment(svc("api", [3]string{"api", "2", ""})), Revision: "r", Targets: targets}
	r := newReconciler(t, reconcile.WithTargetTimeout(3*time.Second), reconcile.WithRolloutTimeout(0))
	watch(t, r)
	if p := mustPlan(t, r, req); len(p.Changes) != 2 {
		t.Fatalf("plan with both servers up: %+v", p)
	}
	second.Stop()
	var p *reconcile.Plan
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		start := time.Now()
		p = mustPlan(t, r, req)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("plan took %s with a target down, want it bounded by the target timeout", took)
		}
		if len(p.Problems) > 0 {
			break
		}
	}
	if len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Message, "target t1 unreachable since ") || !p.Problems[0].Unreachable {
		t.Fatalf("problems %+v, want target t1 unreachable since …, marked unreachable", p.Problems)
	}
	if diff := cmp.Diff([]string{"t1"}, p.UnreachableTargets()); diff != "" {
		t.Errorf("UnreachableTargets (-want +got):\n%s", diff)
	}
	if len(p.Changes) != 1 || p.Changes[0].Target != "t0" {
		t.Fatalf("changes %+v, want api in t0", p.Changes)
	}
	res, err := r.Apply(context.Background(), req, p.PlanHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != 1 || res.Workloads[0].Target != "t0" || res.Workloads[0].Outcome != reconcile.OutcomePatched {
		t.Errorf("workloads %+v, want api patched in t0 only", res.Workloads)
	}
	if diff := cmp.Diff([]string{"t1"}, res.Plan.UnreachableTargets()); diff != "" {
		t.Errorf("the applied plan's UnreachableTargets (-want +got):\n%s", diff)
	}
}

// TestPlanForbiddenKindIsNotUnreachable: a target whose credentials may read
// Deployments but not CronJobs answers every request, so a plan from the
// watches names the refusal instead of calling the target unreachable, and
// the Deployments' watch succeeding does not hide the CronJobs' failing.
func TestPlanForbiddenKindIsNotUnreachable(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "api", "api", 0, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}}})
	const sa = "apps-only"
	if _, err := env.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{Environment: environment(svc("api", [3]string{"api", "2", ""})), Revision: "r",
		Targets: []reconcile.Target{{Name: "t0", Namespace: ns, Client: c}}}
	r := newReconciler(t, reconcile.WithTargetTimeout(5*time.Second), reconcile.WithRolloutTimeout(0))
	watch(t, r)
	for range 3 { // every pass, not only the first: the answers of the other kinds must not clear it
		p := mustPlan(t, r, req)
		if len(p.Problems) != 1 || p.Problems[0].Unreachable || !strings.Contains(p.Problems[0].Message, "forbidden") ||
			!strings.Contains(p.Problems[0].Message, "cronjobs") {
			t.Fatalf("problems %+v, want one naming the forbidden cronjobs, not marked unreachable", p.Problems)
		}
		if len(p.UnreachableTargets()) != 0 || len(p.Changes) != 0 {
			t.Fatalf("unreachable %v, changes %+v; want none", p.UnreachableTargets(), p.Changes)
		}
	}
}
