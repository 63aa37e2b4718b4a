package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestRestore: the workloads of an apply are put back on the images they ran
// before (init containers too), waited for, annotated with the revision they
// came from and given a RolledBack Event; a container someone changed since
// is left alone; restoring again patches nothing.
func TestRestore(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c := env.Clientset
	ctx := context.Background()
	createDeployment(t, c, ns, "api", "api", 1, pod{containers: [][2]string{{"app", "reg.example.com/api:1"}},
		inits: [][2]string{{"migrate", "reg.example.com/migrate:1"}}})
	createDeployment(t, c, ns, "other", "other", 1, pod{containers: [][2]string{{"app", "reg.example.com/other:1"}}})
	req := reconcile.Request{Environment: environment(svc("api", [3]string{"api", "2", ""}, [3]string{"migrate", "2", ""}),
		svc("other", [3]string{"other", "2", ""})), Revision: "new", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)
	if res, err := r.Apply(ctx, req, plan.PlanHash); err != nil || res.Failed() {
		t.Fatalf("Apply: %v, %+v", err, res)
	}
	// Someone moves other on since.
	body := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"reg.example.com/other:3"}]}}}}`
	if _, err := c.AppsV1().Deployments(ns).Patch(ctx, "other", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	back := reconcile.Request{Revision: "old", Targets: req.Targets}
	res, err := newReconciler(t, reconcile.WithRolloutTimeout(30*time.Second)).Restore(ctx, back, reconcile.Undo{Changes: plan.Changes, Reason: "the rollout failed"})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	var got []string
	for _, w := range res.Workloads {
		got = append(got, w.Name+" "+string(w.Outcome))
	}
	if diff := cmp.Diff([]string{"api succeeded"}, got); diff != "" {
		t.Errorf("restored workloads (-want +got):\n%s", diff)
	}
	for _, ch := range res.Plan.Changes {
		if !strings.HasSuffix(ch.From, ":2") || !strings.HasSuffix(ch.To, ":1") {
			t.Errorf("restoring change %+v; want from :2 to :1", ch)
		}
	}
	inits, containers := deploymentImages(t, ns, "api")
	if diff := cmp.Diff([]string{"reg.example.com/migrate:1", "reg.example.com/api:1"}, append(inits, containers...)); diff != "" {
		t.Errorf("api's images after Restore (-want +got):\n%s", diff)
	}
	if _, containers := deploymentImages(t, ns, "other"); containers[0] != "reg.example.com/other:3" {
		t.Errorf("other runs %s; want other:3, left alone", containers[0])
	}
	d, err := c.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev := d.Annotations[reconcile.RevisionAnnotation]; rev != "old" {
		t.Errorf("api's revision annotation = %q; want old", rev)
	}
	events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=RolledBack"})
	if err != nil || len(events.Items) != 1 || events.Items[0].InvolvedObject.Name != "api" ||
		!strings.Contains(events.Items[0].Message, "(the rollout failed)") {
		t.Errorf("RolledBack events = %+v, %v; want one on api with the reason", events.Items, err)
	}

	// Again: nothing runs the new images any more, nothing is patched.
	gen := d.Generation
	res, err = newReconciler(t, reconcile.WithRolloutTimeout(30*time.Second)).Restore(ctx, back, reconcile.Undo{Changes: plan.Changes, Reason: "again"})
	if err != nil || len(res.Workloads) != 0 || len(res.Plan.Changes) != 0 {
		t.Errorf("Restore again = %+v, %v; want nothing to do", res, err)
	}
	if d, err := c.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{}); err != nil || d.Generation != gen {
		t.Errorf("api patched again (generation %d, was %d), %v", d.Generation, gen, err)
	}
}
