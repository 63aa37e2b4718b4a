package argorollouts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// analysisStep is a canary step running AnalysisTemplate check for service api.
const analysisStep = `{analysis: {templates: [{templateName: check}], args: [{name: service, value: api}]}}`

// apply plans req and applies the plan, which must change exactly Rollout name.
func apply(t *testing.T, r *reconcile.Reconciler, req reconcile.Request, name string, opts ...reconcile.Option) reconcile.WorkloadResult {
	t.Helper()
	ctx := context.Background()
	plan, err := r.Plan(ctx, req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var changed []string
	for _, c := range plan.Changes {
		changed = append(changed, c.Kind+"/"+c.Name+" "+c.From+" → "+c.To)
	}
	if len(changed) != 1 || !strings.HasPrefix(changed[0], reconcile.KindRollout+"/"+name+" ") {
		t.Fatalf("plan changes %q, want one change of Rollout %s (problems %v)", changed, name, plan.Problems)
	}
	res, err := r.Apply(ctx, req, plan.PlanHash, opts...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res.Workloads) != 1 {
		t.Fatalf("Apply's workloads: %+v", res.Workloads)
	}
	t.Logf("%s/%s: %s: %s", res.Workloads[0].Kind, res.Workloads[0].Name, res.Workloads[0].Outcome, res.Workloads[0].Message)
	return res.Workloads[0]
}

// TestCanaryPassingAnalysis: a Rollout is planned and patched like any
// workload; its canary steps run on the real controller, the analysis step
// asks the test's server and passes, and the apply ends done once the
// Rollout is Healthy at the new revision.
func TestCanaryPassingAnalysis(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	srv := newAnalysisServer(t, true)
	createTemplate(t, dyn, ns, "check", srv.URL)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, "+analysisStep+", {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	w := apply(t, newReconciler(t), req, "api")
	if w.Outcome != reconcile.OutcomeSucceeded || !strings.HasPrefix(w.Message, "healthy") {
		t.Fatalf("outcome %s %q, want succeeded, healthy", w.Outcome, w.Message)
	}
	image, phase, _ := rolloutOf(t, dyn, ns, "api")
	if image != "reg.example.com/api:2" || phase != "Healthy" {
		t.Errorf("Rollout after the apply: image %s, phase %s", image, phase)
	}
	if srv.asked.Load() == 0 {
		t.Error("the analysis never asked the test's server: the apply ended before the analysis step")
	}
	// Plan sees the Rollout at the new image: nothing left to change.
	plan, err := newReconciler(t).Plan(context.Background(), req)
	if err != nil || len(plan.Changes) != 0 {
		t.Errorf("plan after the apply: %v, %+v", err, plan)
	}
}

// TestCanaryFailingAnalysis: an analysis that fails aborts the Rollout; the
// apply records the failure with Argo Rollouts' message, and Restore puts
// the previous image back once (a second Restore patches nothing).
func TestCanaryFailingAnalysis(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	srv := newAnalysisServer(t, false)
	createTemplate(t, dyn, ns, "check", srv.URL)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, "+analysisStep+", {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	r := newReconciler(t)
	plan, err := r.Plan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	w := apply(t, r, req, "api")
	if w.Outcome != reconcile.OutcomeFailed || !strings.Contains(w.Message, "aborted") && !strings.Contains(w.Message, "degraded") {
		t.Fatalf("outcome %s %q, want failed, aborted or degraded", w.Outcome, w.Message)
	}
	if !strings.Contains(w.Message, `"ok"`) {
		t.Errorf("failure message %q does not carry Argo Rollouts' word on the failed metric ok", w.Message)
	}
	back := reconcile.Request{Revision: "rev1", Targets: req.Targets}
	res, err := r.Restore(context.Background(), back, reconcile.Undo{Changes: plan.Changes, Reason: "the rollout failed"})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	var got []string
	for _, w := range res.Workloads {
		got = append(got, w.Kind+"/"+w.Name+" "+string(w.Outcome))
	}
	if diff := cmp.Diff([]string{"Rollout/api succeeded"}, got); diff != "" {
		t.Errorf("restored (-want +got):\n%s\n%+v", diff, res.Workloads)
	}
	image, phase, msg := rolloutOf(t, dyn, ns, "api")
	if image != "reg.example.com/api:1" || phase != "Healthy" {
		t.Errorf("Rollout after Restore: image %s, phase %s (%s)", image, phase, msg)
	}
	again, err := r.Restore(context.Background(), back, reconcile.Undo{Changes: plan.Changes, Reason: "again"})
	if err != nil || len(again.Workloads) != 0 {
		t.Errorf("a second Restore: %v, %+v; want nothing patched", err, again.Workloads)
	}
}

// TestPausedStepWaits: with promotion wait, an apply shows where the Rollout
// is paused and waits; a person's promotion (kubectl argo rollouts promote's
// patch) lets it finish, and Stagehand promoted nothing itself.
func TestPausedStepWaits(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	progress := newProgressLog()
	done := make(chan reconcile.WorkloadResult, 1)
	go func() {
		done <- apply(t, newReconciler(t), req, "api", progress.option(), reconcile.WithPromotion(reconcile.PromotionWait, "github:alice"))
	}()
	progress.waitFor(t, "paused at step 2 of 3: waiting for promotion", 2*time.Minute)
	select {
	case w := <-done:
		t.Fatalf("the apply ended while the Rollout is paused: %+v", w)
	default:
	}
	// A person promotes it, as `kubectl argo rollouts promote api` does.
	if _, err := dyn.Resource(reconcile.RolloutGVR).Namespace(ns).Patch(context.Background(), "api", types.MergePatchType,
		[]byte(`{"status":{"pauseConditions":null}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	w := <-done
	if w.Outcome != reconcile.OutcomeSucceeded {
		t.Fatalf("outcome %s %q, want succeeded", w.Outcome, w.Message)
	}
	if evs := events(t, env.Clientset, ns, "api", "Promoted"); len(evs) != 0 {
		t.Errorf("Stagehand promoted with promotion wait: %v", evs)
	}
}

// TestPausedStepPromoted: with promotion auto, the apply promotes the
// paused step itself, records who approved the plan in a Promoted Event on
// the Rollout, and ends done.
func TestPausedStepPromoted(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	progress := newProgressLog()
	w := apply(t, newReconciler(t), req, "api", progress.option(), reconcile.WithPromotion(reconcile.PromotionAuto, "github:alice"))
	if w.Outcome != reconcile.OutcomeSucceeded {
		t.Fatalf("outcome %s %q, want succeeded", w.Outcome, w.Message)
	}
	progress.waitFor(t, "promoted: paused at step 2 of 3", time.Second)
	evs := events(t, env.Clientset, ns, "api", "Promoted")
	if len(evs) != 1 || !strings.Contains(evs[0], "github:alice") || !strings.Contains(evs[0], "step 2 of 3") {
		t.Errorf("Promoted Events on the Rollout: %q; want one naming github:alice and step 2 of 3", evs)
	}
}

// TestWorkloadRef: a Rollout whose pod template lives in a Deployment
// (workloadRef) is planned from that Deployment's containers, patched
// through it (the Rollout itself keeps no template) and judged by the
// Rollout.
func TestWorkloadRef(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	zero := int32(0)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api-template", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"match": "api"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"match": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "reg.example.com/api:1"}}}},
	}}
	if _, err := env.Clientset.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, dyn, reconcile.RolloutGVR, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api, labels: {`+label+`: api}}
spec:
  replicas: 2
  selector: {matchLabels: {match: api}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: api-template}
  strategy:
    canary:
      steps: [{setWeight: 50}, {setWeight: 100}]
`)
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	w := apply(t, newReconciler(t), req, "api")
	if w.Outcome != reconcile.OutcomeSucceeded {
		t.Fatalf("outcome %s %q, want succeeded", w.Outcome, w.Message)
	}
	got, err := env.Clientset.AppsV1().Deployments(ns).Get(context.Background(), "api-template", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "reg.example.com/api:2" {
		t.Errorf("the referenced Deployment runs %s, want reg.example.com/api:2", img)
	}
	if image, phase, _ := rolloutOf(t, dyn, ns, "api"); image != "" || phase != "Healthy" {
		t.Errorf("Rollout after the apply: template image %q (want none: it lives in the Deployment), phase %s", image, phase)
	}
	rss, err := env.Clientset.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := false
	for _, rs := range rss.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == "reg.example.com/api:2" && rs.Status.ReadyReplicas == 2 {
			running = true
		}
	}
	if !running {
		t.Error("no ReplicaSet of the Rollout runs reg.example.com/api:2 with 2 ready replicas")
	}
}

// TestWatchedRollouts: while Watch runs (the daemon's way), an apply's
// rollout wait reads what the watch keeps of a Rollout (status, steps,
// pause) and wakes on its events only (the poll interval is an hour, the
// rollout timeout a minute): a canary paused at a step under promotion auto
// is promoted at once and ends done, even though the plan was made where no
// watch ran (the wait starts the target's watches itself), and the next
// plan, from the watch, has nothing left to change.
func TestWatchedRollouts(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	r := newReconciler(t, reconcile.WithPollInterval(time.Hour)) // only the watch's events wake the wait
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan error, 1)
	go func() { watching <- r.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-watching })
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")

	req := reconcile.Request{Environment: environment(svc("api", "api", "2")), Revision: "rev2", Targets: []reconcile.Target{target(t, env, ns)}}
	plan, err := newReconciler(t).Plan(ctx, req) // planned by lists: no watch of the target yet
	if err != nil || len(plan.Changes) != 1 {
		t.Fatalf("plan: %v, %+v", err, plan)
	}
	start := time.Now()
	progress := newProgressLog()
	res, err := r.Apply(ctx, req, plan.PlanHash, progress.option(), reconcile.WithPromotion(reconcile.PromotionAuto, "github:alice"))
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Workloads[0]; w.Outcome != reconcile.OutcomeSucceeded {
		image, phase, msg := rolloutOf(t, dyn, ns, "api")
		t.Fatalf("outcome %s %q after %s, want succeeded (the Rollout: %s %s %s)", w.Outcome, w.Message, time.Since(start), image, phase, msg)
	}
	progress.waitFor(t, "promoted: paused at step 2 of 3", time.Second)
	testenv.WaitFor(t, 30*time.Second, "the watched plan to see the new image", func() bool {
		plan, err := r.Plan(ctx, req)
		return err == nil && len(plan.Changes) == 0 && len(plan.Problems) == 0
	})
}
