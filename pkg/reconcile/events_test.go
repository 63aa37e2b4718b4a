package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestApplyEventsThroughFluxRecorder plugs fluxcd's events.Recorder (over a
// client-go broadcaster) into a target: the Event reaches the API server.
func TestApplyEventsThroughFluxRecorder(t *testing.T) {
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}})

	b := record.NewBroadcaster()
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Clientset.CoreV1().Events("")})
	rec, err := events.NewRecorderForScheme(scheme.Scheme, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "stagehand"}), funcr.New(func(string, string) {}, funcr.Options{}) /* fluxcd calls GetSink().Enabled: logr.Discard() has no sink */, "", "stagehand")
	if err != nil {
		t.Fatal(err)
	}
	tg := target("a", ns)
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
