package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestApplyEventsThroughFluxRecorder plugs fluxcd's events.Recorder (over a
// client-go broadcaster) into a target: the Event reaches the API server.
func TestApplyEventsThroughFluxRecorder(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}})

	b := record.NewBroadcaster()
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Clientset.CoreV1().Events("")})
	rec, err := events.NewRecorderForScheme(scheme.Scheme, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "stagehand"}), funcr.New(func(string, string) {}, funcr.Options{}) /* fluxcd calls GetSink().Enabled: logr.Discard() has no sink */, "", "stagehand")
	if err != nil {
		t.Fatal(err)
	}
	tg := target(t, "a", ns)
	tg.Recorder = rec
	req := reconcile.Request{Environment: environment(svc("web", [3]string{"web", "2", ""})), Revision: "feedbeef", Targets: []reconcile.Target{tg}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(0))
	p := mustPlan(t, r, req)
	if _, err := r.Apply(context.Background(), req, p.PlanHash); err != nil {
		t.Fatal(err)
	}
	var got []corev1.Event
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := env.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err
		}
		got = l.Items
		return len(got) > 0, nil
	})
	if err != nil {
		t.Fatalf("no Event for deployment web: %v", err)
	}
	if ev := got[0]; ev.Reason != "Deploying" || !strings.Contains(ev.Message, "feedbeef") || ev.InvolvedObject.Kind != "Deployment" {
		t.Errorf("event: reason %q kind %q message %q; want Deploying on the Deployment naming the revision", ev.Reason, ev.InvolvedObject.Kind, ev.Message)
	}
}

// TestApplyOneEventPerWorkloadBeforeReturn applies 40 workloads and lists
// the Events the moment Apply returns, without waiting: each workload has
// exactly one Deploying Event, so none is written late or twice.
func TestApplyOneEventPerWorkloadBeforeReturn(t *testing.T) {
	env := cluster.Env(t)
	const n = 40
	ns := env.Namespace(t)
	var services []manifest.Service
	for i := range n {
		name := fmt.Sprintf("w%02d", i)
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
		services = append(services, svc(name, [3]string{name, "2", ""}))
	}
	req := reconcile.Request{Environment: environment(services...), Revision: "cafe", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(0), reconcile.WithConcurrency(4))
	p := mustPlan(t, r, req)
	res, err := r.Apply(context.Background(), req, p.PlanHash)
	if err != nil || len(res.Workloads) != n {
		t.Fatalf("Apply: %v, %d workloads; want %d", err, len(res.Workloads), n)
	}
	l, err := env.Clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, ev := range l.Items {
		if ev.Reason == "Deploying" && ev.InvolvedObject.Kind == "Deployment" && ev.Annotations[reconcile.RevisionAnnotation] == "cafe" {
			got[ev.InvolvedObject.Name]++
		}
	}
	want := map[string]int{}
	for _, s := range services {
		want[s.Name] = 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deploying Events per workload right after Apply (-want +got):\n%s", diff)
	}
}
