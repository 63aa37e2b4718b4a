package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestApplyRollsOutEveryKind applies a pinned plan to every workload kind
// (with init and sidecar containers), waits for real rollouts, reads back
// images, annotations and Events, and plans again to find nothing to do.
func TestApplyRollsOutEveryKind(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t)
	h := reg.Host()
	d := map[string]string{}
	for _, repo := range []string{"api", "api-migrate", "db", "agent", "report"} {
		d[repo] = reg.Push(t, "team/"+repo, "2")
	}
	ns := env.Namespace(t)
	c := env.Clientset
	createDeployment(t, c, ns, "api", "api", 2, pod{
		inits:      [][2]string{{"migrate", h + "/team/api-migrate:1"}},
		containers: [][2]string{{"app", h + "/team/api:1"}, {"envoy", "envoyproxy/envoy:v1.30"}},
	})
	createStatefulSet(t, c, ns, "db", "db", 1, pod{containers: [][2]string{{"db", h + "/team/db:1"}}})
	createDaemonSet(t, c, ns, "agent", "agent", pod{containers: [][2]string{{"agent", h + "/team/agent:1"}}})
	createCronJob(t, c, ns, "report", "report", pod{containers: [][2]string{{"report", h + "/team/report:1"}}})
	e := environment(
		svc("api", [3]string{"team/api", "2", d["api"]}, [3]string{"team/api-migrate", "2", ""}),
		svc("db", [3]string{"team/db", "2", ""}),
		svc("agent", [3]string{"team/agent", "2", ""}),
		svc("report", [3]string{"team/report", "2", ""}),
	)
	req := reconcile.Request{Environment: e, Revision: "0123456789abcdef", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithVerifyDigests(true), reconcile.WithPinDigests(true), reconcile.WithRolloutTimeout(90*time.Second))

	plan := mustPlan(t, r, req)
	if len(plan.Changes) != 5 || len(plan.Problems) != 0 {
		t.Fatalf("plan: %d changes, problems %v; want 5 changes, no problems", len(plan.Changes), plan.Problems)
	}
	var mu sync.Mutex
	phases := map[string][]reconcile.Phase{}
	res, err := r.Apply(context.Background(), req, plan.PlanHash, reconcile.WithProgress(func(p reconcile.Progress) {
		mu.Lock()
		defer mu.Unlock()
		phases[p.Kind+"/"+p.Name] = append(phases[p.Kind+"/"+p.Name], p.Phase)
	}))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	outcomes := map[string]reconcile.Outcome{}
	for _, w := range res.Workloads {
		outcomes[w.Kind+"/"+w.Name] = w.Outcome
		if w.Outcome != reconcile.OutcomeSucceeded {
			t.Errorf("%s/%s: %s: %s", w.Kind, w.Name, w.Outcome, w.Message)
		}
	}
	wantOutcomes := map[string]reconcile.Outcome{"Deployment/api": "succeeded", "StatefulSet/db": "succeeded", "DaemonSet/agent": "succeeded", "CronJob/report": "succeeded"}
	if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for k, ph := range phases {
		// patched, any number of rolling-out steps, succeeded
		n := len(ph)
		if n < 2 || ph[0] != reconcile.PhasePatched || ph[n-1] != reconcile.PhaseSucceeded ||
			slices.ContainsFunc(ph[1:n-1], func(p reconcile.Phase) bool { return p != reconcile.PhaseRollingOut }) {
			t.Errorf("%s progress %q; want patched, rolling out…, succeeded", k, ph)
		}
	}
	if len(phases) != 4 {
		t.Errorf("progress reported %d workloads, want 4", len(phases))
	}

	for _, w := range res.Workloads {
		t.Logf("%s/%s: %s (%s) in %s", w.Kind, w.Name, w.Outcome, w.Message, w.Duration)
	}
	// The rollouts really happened: every pod now runs the new images and is ready.
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready && strings.Contains(cs.Image, ":2@sha256:") {
				ready[p.Labels["match"]]++
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"api": 2, "db": 1, "agent": 1}, ready); diff != "" {
		t.Errorf("ready containers on the new image per workload (-want +got):\n%s", diff)
	}

	inits, containers := deploymentImages(t, ns, "api")
	wantInits := []string{h + "/team/api-migrate:2@" + d["api-migrate"]}
	wantContainers := []string{h + "/team/api:2@" + d["api"], "envoyproxy/envoy:v1.30"}
	if diff := cmp.Diff(wantInits, inits); diff != "" {
		t.Errorf("api init containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantContainers, containers); diff != "" {
		t.Errorf("api containers (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	dep, err := c.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := dep.Annotations[reconcile.RevisionAnnotation]; got != req.Revision {
		t.Errorf("revision annotation = %q, want %q", got, req.Revision)
	}
	if _, ok := dep.Spec.Template.Annotations[reconcile.RevisionAnnotation]; ok {
		t.Errorf("pod template got the revision annotation; only images may change in the template")
	}
	managers := map[string]bool{}
	for _, mf := range dep.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers[reconcile.FieldManager] {
		t.Errorf("managed fields %v lack field manager %q", managers, reconcile.FieldManager)
	}
	cj, err := c.BatchV1().CronJobs(ns).Get(ctx, "report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image, h+"/team/report:2@"+d["report"]; got != want {
		t.Errorf("cronjob image = %s, want %s", got, want)
	}

	events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Deploying"})
	if err != nil {
		t.Fatal(err)
	}
	var evented []string
	for _, ev := range events.Items {
		if ev.Type != corev1.EventTypeNormal || !strings.Contains(ev.Message, "0123456789ab") {
			t.Errorf("event %s/%s: type %s message %q", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Type, ev.Message)
		}
		evented = append(evented, ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name)
	}
	slices.Sort(evented)
	if diff := cmp.Diff([]string{"CronJob/report", "DaemonSet/agent", "Deployment/api", "StatefulSet/db"}, evented); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	again := mustPlan(t, r, req)
	if len(again.Changes) != 0 || again.Unchanged != 5 {
		t.Errorf("plan after apply: %d changes (%v), %d unchanged; want none and 5 unchanged", len(again.Changes), again.Changes, again.Unchanged)
	}
}

// TestApplyRefusesStaleHash changes the manifest, then the cluster, between
// plan and apply: each apply is refused with ErrStalePlan and nothing is
// patched.
func TestApplyRefusesStaleHash(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}})
	e := environment(svc("web", [3]string{"web", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t)
	plan := mustPlan(t, r, req)

	e.Services[0].Containers[0].DockerTag = "3" // a newer manifest arrives
	_, err := r.Apply(context.Background(), req, plan.PlanHash)
	var stale *reconcile.StalePlanError
	if !errors.As(err, &stale) || !errors.Is(err, reconcile.ErrStalePlan) {
		t.Fatalf("Apply error = %v, want a *StalePlanError", err)
	}
	if stale.Want != plan.PlanHash || stale.Got == plan.PlanHash {
		t.Errorf("StalePlanError{Want: %s, Got: %s}; want Want = the approved hash %s and a different Got", stale.Want, stale.Got, plan.PlanHash)
	}
	if _, containers := deploymentImages(t, ns, "web"); containers[0] != "reg.example.com/web:1" {
		t.Errorf("image = %s after a refused apply, want it untouched", containers[0])
	}

	// Someone changes the workload by hand after the review.
	plan = mustPlan(t, r, req)
	hand := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"reg.example.com/web:hotfix"}]}}}}`
	if _, err := env.Clientset.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(hand), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(context.Background(), req, plan.PlanHash); !errors.Is(err, reconcile.ErrStalePlan) {
		t.Fatalf("Apply after a change in the cluster: error %v, want ErrStalePlan", err)
	}
	if _, containers := deploymentImages(t, ns, "web"); containers[0] != "reg.example.com/web:hotfix" {
		t.Errorf("image = %s after a refused apply, want the hand-set one kept", containers[0])
	}
}

// meeting holds the requests that arrive while it is open until want of them
// have arrived (or wait has passed, which it counts).
type meeting struct {
	open     atomic.Bool
	arrived  atomic.Int32
	want     int32
	all      chan struct{}
	wait     time.Duration
	timedOut atomic.Int32
}

func (m *meeting) join() {
	if !m.open.Load() {
		return
	}
	if m.arrived.Add(1) == m.want {
		close(m.all)
	}
	select {
	case <-m.all:
	case <-time.After(m.wait):
		m.timedOut.Add(1)
	}
}

// meetingLocks is listingLocks whose BlockingWithin joins a meeting.
type meetingLocks struct {
	*listingLocks
	m *meeting
}

func (l meetingLocks) BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	l.m.join()
	return l.listingLocks.BlockingWithin(ctx, prefix, lockType)
}

// TestApplyPlansAtOnce: Apply's plan, read from the API server, lists the
// four workload kinds and checks the locks at the same time, so the apply
// waits for the slowest of those round trips rather than for their sum: each
// of the five requests is held until all five have been sent.
func TestApplyPlansAtOnce(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}})
	m := &meeting{want: 5, all: make(chan struct{}), wait: 3 * time.Second}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "" && slices.ContainsFunc(
				[]string{"/deployments", "/statefulsets", "/daemonsets", "/cronjobs"},
				func(kind string) bool { return strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+kind) }) {
				m.join()
			}
			return rt.RoundTrip(r)
		})
	})
	tg := target(t, "a", ns)
	tg.Client = kubernetes.NewForConfigOrDie(cfg)
	req := reconcile.Request{Environment: environment(svc("web", [3]string{"web", "2", ""})), Revision: "r",
		Targets: []reconcile.Target{tg}, LockPath: "apps/prod"}
	locks := meetingLocks{listingLocks: &listingLocks{memLocks: &memLocks{locks: map[string]string{}}}, m: m}
	r := newReconciler(t, reconcile.WithRolloutTimeout(0), reconcile.WithLocks(locks, nil))
	p := mustPlan(t, r, req)
	m.open.Store(true)
	res, err := r.Apply(context.Background(), req, p.PlanHash)
	if err != nil || res.Failed() || len(res.Workloads) != 1 {
		t.Fatalf("Apply: %v, %+v", err, res)
	}
	if n := m.timedOut.Load(); n != 0 || m.arrived.Load() < 5 {
		t.Errorf("%d of the %d lists and lock checks of Apply's plan waited %s for the others; want all five sent at once",
			n, m.arrived.Load(), m.wait)
	}
}

// TestApplyBoundsConcurrency applies 24 workloads with concurrency 3 through
// a client whose patches take 30ms: never more than 3 patches (nor 3 Event
// writes) are in flight, and 3 are.
func TestApplyBoundsConcurrency(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	var services []manifest.Service
	for i := range 24 {
		name := fmt.Sprintf("w%02d", i)
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
		services = append(services, svc(name, [3]string{name, "2", ""}))
	}
	var mu sync.Mutex
	inFlight, most := map[string]int{}, map[string]int{}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPatch && r.Method != http.MethodPost {
				return rt.RoundTrip(r)
			}
			mu.Lock()
			inFlight[r.Method]++
			most[r.Method] = max(most[r.Method], inFlight[r.Method])
			mu.Unlock()
			defer func() { mu.Lock(); inFlight[r.Method]--; mu.Unlock() }()
			time.Sleep(30 * time.Millisecond)
			return rt.RoundTrip(r)
		})
	})
	tg := target(t, "a", ns)
	tg.Client = kubernetes.NewForConfigOrDie(cfg)
	req := reconcile.Request{Environment: environment(services...), Revision: "r", Targets: []reconcile.Target{tg}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(0), reconcile.WithConcurrency(3))
	p := mustPlan(t, r, req)
	res, err := r.Apply(context.Background(), req, p.PlanHash)
	if err != nil || res.Failed() || len(res.Workloads) != 24 {
		t.Fatalf("Apply: %v, %d workloads, failed %v", err, len(res.Workloads), res.Failed())
	}
	if diff := cmp.Diff(map[string]int{"PATCH": 3, "POST": 3}, most); diff != "" {
		t.Errorf("most requests in flight by method (-want +got):\n%s", diff)
	}
}

// TestApplyReportsFailedRollouts: a Deployment whose new pods can never be
// scheduled fails by its progress deadline, a StatefulSet likewise by the
// rollout timeout, and so does a Deployment whose pods run on the node but
// never become ready; a healthy Deployment beside them succeeds.
func TestApplyReportsFailedRollouts(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c := env.Clientset
	nowhere := map[string]string{"stagehand.io/no-such-node": "true"}
	createDeployment(t, c, ns, "stuck", "stuck", 1, pod{containers: [][2]string{{"app", "reg.example.com/stuck:1"}}, nodeSelector: nowhere},
		func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr(int32(2)) })
	createStatefulSet(t, c, ns, "pending", "pending", 1, pod{containers: [][2]string{{"app", "reg.example.com/pending:1"}}, nodeSelector: nowhere})
	createDeployment(t, c, ns, "fine", "fine", 1, pod{containers: [][2]string{{"app", "reg.example.com/fine:1"}}})
	// Scheduled on the fake node, but kwok leaves the status of pods so
	// annotated alone: they never become ready.
	createDeployment(t, c, ns, "unready", "unready", 1, pod{containers: [][2]string{{"app", "reg.example.com/unready:1"}}},
		func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"kwok.x-k8s.io/status": "custom"}
		})
	e := environment(
		svc("stuck", [3]string{"stuck", "2", ""}),
		svc("pending", [3]string{"pending", "2", ""}),
		svc("fine", [3]string{"fine", "2", ""}),
		svc("unready", [3]string{"unready", "2", ""}),
	)
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	const timeout = 8 * time.Second
	r := newReconciler(t, reconcile.WithRolloutTimeout(timeout))
	plan := mustPlan(t, r, req)
	start := time.Now()
	res, err := r.Apply(context.Background(), req, plan.PlanHash)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if took := time.Since(start); took > timeout+5*time.Second {
		t.Errorf("Apply took %s, want it bounded by the %s rollout timeout", took, timeout)
	}
	got := map[string]string{}
	for _, w := range res.Workloads {
		got[w.Name] = string(w.Outcome)
		switch w.Name {
		case "stuck":
			if !strings.Contains(w.Message, "progress deadline exceeded") {
				t.Errorf("stuck: message %q, want the progress deadline", w.Message)
			}
		case "pending", "unready":
			if !strings.Contains(w.Message, "rollout not finished after 8s") {
				t.Errorf("%s: message %q, want the rollout timeout", w.Name, w.Message)
			}
		}
	}
	if diff := cmp.Diff(map[string]string{"stuck": "failed", "pending": "failed", "fine": "succeeded", "unready": "failed"}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if !res.Failed() {
		t.Errorf("Result.Failed() = false, want true")
	}
	warnings, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=RolloutFailed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings.Items) != 3 {
		t.Errorf("got %d RolloutFailed events, want 3", len(warnings.Items))
	}
	// Each workload's Deploying Event is written before its RolloutFailed
	// one (resourceVersions of one etcd grow with every write).
	deploying, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Deploying"})
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, ev := range deploying.Items {
		written[ev.InvolvedObject.Name], _ = strconv.Atoi(ev.ResourceVersion)
	}
	for _, ev := range warnings.Items {
		rv, _ := strconv.Atoi(ev.ResourceVersion)
		if d, ok := written[ev.InvolvedObject.Name]; !ok || d >= rv {
			t.Errorf("%s: RolloutFailed Event (resourceVersion %d) not after its Deploying Event (%d, found %v)", ev.InvolvedObject.Name, rv, d, ok)
		}
	}
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "match=unready"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			t.Errorf("unready pod %s was not scheduled; want it on the node, just never ready", p.Name)
		}
	}
	if len(pods.Items) == 0 {
		t.Errorf("no pods of unready")
	}
}

func ptr[T any](v T) *T { return &v }

// TestApplyOnDeleteIsNotDone: a StatefulSet and a DaemonSet with
// updateStrategy OnDelete, rolled by the real controllers, end as
// patched-on-delete ("patched, pods change when deleted"), not succeeded:
// their pods still run the old image.
func TestApplyOnDeleteIsNotDone(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c := env.Clientset
	ctx := context.Background()
	createStatefulSet(t, c, ns, "cache", "cache", 1, pod{containers: [][2]string{{"app", "reg.example.com/cache:1"}}})
	createDaemonSet(t, c, ns, "logs", "logs", pod{containers: [][2]string{{"app", "reg.example.com/logs:1"}}})
	onDelete := []byte(`{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}`)
	if _, err := c.AppsV1().StatefulSets(ns).Patch(ctx, "cache", types.MergePatchType, onDelete, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().DaemonSets(ns).Patch(ctx, "logs", types.MergePatchType, onDelete, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e := environment(svc("cache", [3]string{"cache", "2", ""}), svc("logs", [3]string{"logs", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(60*time.Second))
	plan := mustPlan(t, r, req)
	var mu sync.Mutex
	last := map[string]reconcile.Phase{}
	res, err := r.Apply(ctx, req, plan.PlanHash, reconcile.WithProgress(func(p reconcile.Progress) {
		mu.Lock()
		defer mu.Unlock()
		last[p.Name] = p.Phase
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range res.Workloads {
		got[w.Name] = string(w.Outcome)
		if !strings.HasPrefix(w.Message, "patched, pods change when deleted") {
			t.Errorf("%s: message %q", w.Name, w.Message)
		}
	}
	if diff := cmp.Diff(map[string]string{"cache": "patched-on-delete", "logs": "patched-on-delete"}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]reconcile.Phase{"cache": reconcile.PhaseOnDelete, "logs": reconcile.PhaseOnDelete}, last); diff != "" {
		t.Errorf("last phases (-want +got):\n%s", diff)
	}
	if res.Failed() {
		t.Errorf("Result.Failed() = true; an OnDelete rollout is patched, not failed")
	}
}
