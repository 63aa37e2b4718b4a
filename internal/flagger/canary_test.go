package flagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/revert"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// userAgent is the user agent of the tests' Stagehand client: the audit
// log tells its writes from Flagger's by it.
const userAgent = "stagehand-flagger-test"

var canaries = schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "canaries"}

// webhook is an analysis webhook Flagger calls: it passes (200) or fails
// (500 with a reason) as the test says, and counts its calls.
type webhook struct {
	*httptest.Server
	fail  atomic.Bool
	calls atomic.Int64
}

func newWebhook(t *testing.T, fail bool) *webhook {
	w := &webhook{}
	w.fail.Store(fail)
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.calls.Add(1)
		if w.fail.Load() {
			http.Error(rw, "acceptance tests failed: 3 of 10 requests answered 503", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(rw, "acceptance tests passed")
	}))
	t.Cleanup(w.Close)
	return w
}

// setup creates Deployment web (one replica, image web:1.0) and a Canary
// targeting it (the kubernetes provider, iterations analysis steps of
// Flagger's least interval, 10s, each calling hook, failed at the first
// failed check), and waits for Flagger to initialise it: web-primary
// created and serving, web scaled to zero. Flagger's selector label (app)
// is not Stagehand's (app.kubernetes.io/name), so Flagger copies
// Stagehand's label to the primary unchanged (testenv runs it with
// -include-label-prefix=*): web-primary looks like a workload of service
// web, and only its owner says it is Flagger's.
func setup(t *testing.T, hook *webhook, iterations int) (ns string) {
	t.Helper()
	env := cluster.Env(t)
	ns = env.Namespace(t)
	ctx := context.Background()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{testenv.ServiceLabel: "web", "app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/team/web:1.0"}},
					TerminationGracePeriodSeconds: new(int64)},
			},
		},
	}
	if _, err := env.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment web: %v", err)
	}
	c := &unstructured.Unstructured{}
	spec := fmt.Sprintf(`{"apiVersion": "flagger.app/v1beta1", "kind": "Canary", "metadata": {"name": "web"},
		"spec": {"provider": "kubernetes", "progressDeadlineSeconds": 60,
			"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"service": {"port": 80, "targetPort": 8080},
			"analysis": {"interval": "10s", "threshold": 1, "iterations": %d,
				"webhooks": [{"name": "acceptance", "type": "rollout", "url": %q, "timeout": "5s"}]}}}`, iterations, hook.URL)
	if err := json.Unmarshal([]byte(spec), &c.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn(t).Resource(canaries).Namespace(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating canary web: %v", err)
	}
	testenv.WaitFor(t, 2*time.Minute, "Flagger to initialise canary web", func() bool { return phase(t, ns) == "Initialized" })
	return ns
}

func dyn(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cluster.Env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// phase is canary web's status.phase.
func phase(t *testing.T, ns string) string {
	t.Helper()
	u, err := dyn(t).Resource(canaries).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading canary web: %v", err)
	}
	p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return p
}

// stagehand is the client Stagehand's reconciler gets: the admin's, with
// the test's user agent.
func stagehand(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Env(t).Config)
	cfg.UserAgent = userAgent
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(t *testing.T, ns, tag, revision string) reconcile.Request {
	return reconcile.Request{
		Environment: &manifest.Environment{Name: "test", Root: "environments/test/manifest.json", Services: []manifest.Service{{
			Name: "web", Source: "environments/test/manifest.json",
			Containers: []manifest.Container{{DockerName: "team/web", DockerTag: tag}},
		}}},
		Revision: revision,
		Targets:  []reconcile.Target{{Name: "a", Namespace: ns, Client: stagehand(t)}},
	}
}

func newReconciler(t *testing.T) *reconcile.Reconciler {
	t.Helper()
	// A canary takes a step of at least 10s per analysis iteration, and
	// Flagger notices a new template within one of them.
	r, err := reconcile.New(reconcile.WithRolloutTimeout(4*time.Minute), reconcile.WithPollInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// planWeb plans tag for service web and wants one change: Deployment web
// 1.0 → tag, never web-primary.
func planWeb(t *testing.T, r *reconcile.Reconciler, req reconcile.Request, from, to string) *reconcile.Plan {
	t.Helper()
	p, err := r.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var got []string
	for _, c := range p.Changes {
		got = append(got, fmt.Sprintf("%s/%s %s: %s → %s", c.Kind, c.Name, c.Container, c.From, c.To))
	}
	want := []string{fmt.Sprintf("Deployment/web web: %s → %s", from, to)}
	if diff := cmp.Diff(want, got); diff != "" || len(p.Problems) > 0 || len(p.Unmanaged) > 0 {
		t.Fatalf("plan changes (-want +got):\n%s\nproblems %v, unmanaged %v", diff, p.Problems, p.Unmanaged)
	}
	return p
}

// progress records an apply's progress messages.
type progress struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progress) add(pr reconcile.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, string(pr.Phase)+": "+pr.Message)
}

func (p *progress) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

// TestCanaryPassesIsDone applies a new image to a Deployment a Canary
// targets, with a passing analysis of two iterations: the plan patches the
// target (never the primary, labelled like it), the apply waits through
// Flagger's analysis, showing where it stands ("canary analysing: 1 of 2
// iterations", in its progress and in CanaryProgress, the status of the
// apply in flight), and is done only once Flagger promoted the image: the
// Canary Succeeded and web-primary runs it. Planned again, nothing is left.
func TestCanaryPassesIsDone(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, false)
	ns := setup(t, hook, 2)
	r := newReconciler(t)
	req := request(t, ns, "2.0", "0123456789abcdef")
	plan := planWeb(t, r, req, "registry.example/team/web:1.0", "registry.example/team/web:2.0")

	var prog progress
	var shown []string // what the status of the apply in flight says meanwhile (reconcile.CanaryProgress)
	res, err := r.Apply(context.Background(), req, plan.PlanHash, reconcile.WithProgress(func(p reconcile.Progress) {
		prog.add(p)
		if shown == nil && strings.HasPrefix(p.Message, "canary analysing: ") {
			shown = reconcile.CanaryProgress(context.Background(), req.Targets, plan.Changes)
		}
	}))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if p := phase(t, ns); p != "Succeeded" {
		t.Errorf("the apply returned while canary web was %s, not Succeeded", p)
	}
	if len(res.Workloads) != 1 || res.Workloads[0].Outcome != reconcile.OutcomeSucceeded ||
		res.Workloads[0].Message != "canary web succeeded: Flagger promoted the new images to web-primary" {
		t.Fatalf("workloads %s; want web succeeded, promoted by Flagger", describe(res.Workloads))
	}
	if img := cluster.Env(t).Image(t, ns, "web-primary"); img != "registry.example/team/web:2.0" {
		t.Errorf("web-primary runs %s, want web:2.0", img)
	}
	if hook.calls.Load() < 2 {
		t.Errorf("the analysis webhook was called %d times, want at least 2 (one per iteration)", hook.calls.Load())
	}
	analysing := regexp.MustCompile(`^rolling out: canary analysing: [0-2] of 2 iterations$`)
	msgs := prog.all()
	if !slices.ContainsFunc(msgs, analysing.MatchString) {
		t.Errorf("no progress says where the analysis stands (%s); progress:\n%s", analysing, strings.Join(msgs, "\n"))
	}

	inFlight := regexp.MustCompile(`^Deployment web on a: canary analysing: [0-2] of 2 iterations$`)
	if len(shown) != 1 || !inFlight.MatchString(shown[0]) {
		t.Errorf("CanaryProgress during the analysis = %q, want one line matching %s", shown, inFlight)
	}
	if after := reconcile.CanaryProgress(context.Background(), req.Targets, plan.Changes); len(after) != 0 {
		t.Errorf("CanaryProgress once promoted = %q, want nothing", after)
	}

	again, err := r.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(again.Changes) != 0 || len(again.Problems) != 0 {
		t.Errorf("planned again: changes %v, problems %v; want none", again.Changes, again.Problems)
	}
}

// TestCanaryFailsNoSecondRollback applies a new image to a Deployment a
// Canary targets whose analysis webhook fails: Flagger fails the canary and
// rolls it back itself (web-primary keeps web:1.0, web is scaled to zero).
// The apply is a failed rollout with Flagger's message, and the daemon's
// rollback of it (onFailedRollout: rollback: internal/revert over the state)
// records it rolled back, the revision not applied again, and patches
// nothing: the Deployment's image history is Stagehand's one patch (audit
// log) and two ReplicaSets, 1.0 then 2.0, with no third revision putting 1.0
// back.
func TestCanaryFailsNoSecondRollback(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, true)
	ns := setup(t, hook, 3)
	r := newReconciler(t)
	req := request(t, ns, "2.0", "0123456789abcdef")
	plan := planWeb(t, r, req, "registry.example/team/web:1.0", "registry.example/team/web:2.0")

	var prog progress
	res, err := r.Apply(context.Background(), req, plan.PlanHash, reconcile.WithProgress(prog.add))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if p := phase(t, ns); p != "Failed" {
		t.Errorf("the apply returned while canary web was %s, not Failed", p)
	}
	want := "canary web failed: Canary analysis failed, Deployment scaled to zero; Flagger rolled back: its primary serves the images from before"
	if len(res.Workloads) != 1 || res.Workloads[0].Outcome != reconcile.OutcomeFailed || res.Workloads[0].Message != want || !res.Failed() {
		t.Fatalf("workloads %s; want web failed: %s", describe(res.Workloads), want)
	}
	if hook.calls.Load() < 1 {
		t.Error("the failing analysis webhook was never called")
	}

	// The daemon's rollback of the failed apply (onFailedRollout: rollback),
	// recorded in the environment's state on the API server.
	entry := rollBack(t, r, req, plan, res, "rollout failed: "+want)
	if entry.Result != approval.ResultRolledBack || entry.Message != "rollout failed: "+want+
		"; rolled back: the workloads run the images from before the apply (nothing was left to patch)" {
		t.Errorf("history entry %s: %q; want rolled back, nothing left to patch", entry.Result, entry.Message)
	}

	env := cluster.Env(t)
	if img := env.Image(t, ns, "web-primary"); img != "registry.example/team/web:1.0" {
		t.Errorf("web-primary runs %s, want web:1.0 (Flagger's rollback)", img)
	}
	if img := env.Image(t, ns, "web"); img != "registry.example/team/web:2.0" {
		t.Errorf("web's template has %s, want web:2.0 (the failed canary, left as Flagger left it)", img)
	}
	evs, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, ev := range evs {
		if ev.UserAgent == userAgent && ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Namespace == ns {
			writes = append(writes, ev.Verb+" "+ev.ObjectRef.Name)
		}
	}
	if diff := cmp.Diff([]string{"patch web"}, writes); diff != "" {
		t.Errorf("Stagehand's writes to the namespace's Deployments (-want +got):\n%s", diff)
	}
	rss, err := env.Clientset.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	history := map[string]string{}
	for _, rs := range rss.Items {
		history[rs.Annotations["deployment.kubernetes.io/revision"]] = rs.Spec.Template.Spec.Containers[0].Image
	}
	if diff := cmp.Diff(map[string]string{"1": "registry.example/team/web:1.0", "2": "registry.example/team/web:2.0"}, history); diff != "" {
		t.Errorf("web's revisions (ReplicaSets; -want +got):\n%s", diff)
	}
}

// rollBack rolls the failed apply of plan (res) back as the daemon does with
// onFailedRollout: rollback (internal/revert, over the environment's state
// in a namespace of its own, pkg/reconcile's Restore on req's targets), and
// returns the history entry it recorded.
func rollBack(t *testing.T, r *reconcile.Reconciler, req reconcile.Request, plan *reconcile.Plan, res *reconcile.Result, cause string) approval.Entry {
	t.Helper()
	env := cluster.Env(t)
	store := state.NewStore(env.Clientset, env.Namespace(t))
	ctx := context.Background()
	changes, err := json.Marshal(plan.Changes)
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := json.Marshal(res.Workloads)
	if err != nil {
		t.Fatal(err)
	}
	var completed []approval.Outcome
	rv := revert.New(revert.Config{
		Env: "test", Targets: req.Targets, Store: store, Restore: r.Restore,
		Grace:     func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(ctx) },
		Completed: func(_ context.Context, _ approval.Proposal, out approval.Outcome) { completed = append(completed, out) },
		Now:       time.Now, Log: logr.Discard(),
	})
	e := approval.Entry{Revision: req.Revision, PlanHash: plan.PlanHash, Changes: changes, Workloads: workloads,
		Result: approval.ResultFailed, Message: cause, Started: time.Now(), Finished: time.Now()}
	if err := rv.Start(ctx, e, cause); err != nil {
		t.Fatalf("rolling back: %v", err)
	}
	st, err := store.Load(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.Failed == nil || st.Failed.Revision != req.Revision || len(completed) != 1 {
		t.Fatalf("after the rollback: %d history entries, failed %+v, %d outcomes reported; want one of each", len(st.History), st.Failed, len(completed))
	}
	return st.History[0]
}

// describe is each workload result: key, outcome and message.
func describe(ws []reconcile.WorkloadResult) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "[%s %s: %s]", w.WorkloadKey, w.Outcome, w.Message)
	}
	return b.String()
}
