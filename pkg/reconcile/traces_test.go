package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestApplyTraces: Apply under a caller's span makes a patch span per
// workload and one span for the rollout wait, each the caller's child; the
// wait has an event per workload with its outcome, and a rollout that fails
// marks it Error.
// Without a span in the context nothing is traced (the other tests).
func TestApplyTraces(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	c := env.Clientset
	nowhere := map[string]string{"stagehand.io/no-such-node": "true"}
	createDeployment(t, c, ns, "fine", "fine", 1, pod{containers: [][2]string{{"app", "reg.example.com/fine:1"}}})
	createStatefulSet(t, c, ns, "pending", "pending", 1, pod{containers: [][2]string{{"app", "reg.example.com/pending:1"}}, nodeSelector: nowhere})
	e := environment(svc("fine", [3]string{"fine", "2", ""}), svc("pending", [3]string{"pending", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithRolloutTimeout(5*time.Second))
	plan := mustPlan(t, r, req)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "apply")
	if _, err := r.Apply(ctx, req, plan.PlanHash); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	parent.End()

	type row struct {
		Name, Workload, Outcome string
		Error, Child            bool
	}
	var got []row
	for _, s := range rec.Ended() {
		if s.Name() == "apply" {
			continue
		}
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.Emit()
		}
		got = append(got, row{Name: s.Name(), Workload: a["stagehand.workload"], Outcome: a["stagehand.outcome"],
			Error: s.Status().Code == codes.Error, Child: s.Parent().SpanID() == parent.SpanContext().SpanID()})
	}
	want := []row{
		{Name: "patch", Workload: "Deployment " + ns + "/fine", Outcome: "patched", Child: true},
		{Name: "patch", Workload: "StatefulSet " + ns + "/pending", Outcome: "patched", Child: true},
		{Name: "rollout wait", Error: true, Child: true},
	}
	sortRows := cmp.Transformer("sort", func(in []row) []row {
		out := append([]row(nil), in...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j].Name+out[j].Workload < out[i].Name+out[i].Workload {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	})
	if diff := cmp.Diff(want, got, sortRows); diff != "" {
		t.Errorf("Apply's spans (-want +got):\n%s", diff)
	}
	events := map[string]string{}
	for _, s := range rec.Ended() {
		for _, ev := range s.Events() {
			a := map[string]string{}
			for _, kv := range ev.Attributes {
				a[string(kv.Key)] = kv.Value.Emit()
			}
			events[s.Name()+": "+ev.Name+" "+a["stagehand.workload"]] = a["stagehand.outcome"]
		}
	}
	wantEvents := map[string]string{"rollout wait: rolled out Deployment " + ns + "/fine": "succeeded",
		"rollout wait: rolled out StatefulSet " + ns + "/pending": "failed"}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("the rollout wait's events (-want +got):\n%s", diff)
	}
}
