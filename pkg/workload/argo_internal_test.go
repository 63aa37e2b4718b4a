package workload

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJudgeRollout holds the judgement of a Rollout to Argo Rollouts'
// phases: nothing is judged before the controller observed the patch (with
// a workloadRef, the Deployment's generation, through the annotation and
// status Argo Rollouts writes), Healthy is done, Degraded and an abort fail,
// a pause at a canary step says where and may be promoted, a pause by
// spec.paused may not.
func TestJudgeRollout(t *testing.T) {
	step := func(i int32) *int32 { return &i }
	steps := []json.RawMessage{json.RawMessage(`{"setWeight":20}`), json.RawMessage(`{"pause":{}}`), json.RawMessage(`{"pause":{}}`),
		json.RawMessage(`{"setWeight":80}`), json.RawMessage(`{"pause":{}}`)}
	canary := func(o *argoRollout) { o.Spec.Strategy.Canary = &argoCanary{Steps: steps} }
	for _, tc := range []struct {
		name string
		gen  int64
		set  func(*argoRollout)
		want Status
	}{
		{"not observed", 3, func(o *argoRollout) { o.Status.ObservedGeneration, o.Status.Phase = "2", "Healthy" },
			Status{Message: "waiting for the controller to observe generation 3 (at 2)"}},
		{"healthy", 3, func(o *argoRollout) { o.Status.Phase, o.Status.StableRS = "Healthy", "5c9f8d7b6" },
			Status{Done: true, Message: "healthy: ReplicaSet api-5c9f8d7b6 is stable"}},
		{"progressing", 3, func(o *argoRollout) {
			o.Status.Phase, o.Status.Message = "Progressing", "more replicas need to be updated"
		},
			Status{Message: "more replicas need to be updated"}},
		{"degraded", 3, func(o *argoRollout) {
			o.Status.Phase, o.Status.Message = "Degraded", `RolloutAborted: Rollout aborted update to revision 2: Metric "ok" assessed Failed`
		}, Status{Failed: true, Message: `degraded: RolloutAborted: Rollout aborted update to revision 2: Metric "ok" assessed Failed`}},
		{"aborted", 3, func(o *argoRollout) { o.Status.Abort, o.Status.Phase = true, "Progressing" }, Status{Failed: true, Message: "aborted: Progressing"}},
		{"paused at a step", 3, func(o *argoRollout) {
			canary(o)
			o.Status.Phase, o.Status.CurrentStepIndex = "Paused", step(2)
			o.Status.PauseConditions = []argoPause{{Reason: "CanaryPauseStep", StartTime: "2026-11-29T06:00:00Z"}}
		}, Status{Paused: true, Pause: "CanaryPauseStep@2026-11-29T06:00:00Z", Message: "paused at step 3 of 5: waiting for promotion"}},
		{"paused by spec", 3, func(o *argoRollout) { canary(o); o.Spec.Paused, o.Status.Phase = true, "Paused" },
			Status{Message: "paused by spec.paused: waiting for someone to resume it"}},
		{"unpausing", 3, func(o *argoRollout) { o.Status.ControllerPause, o.Status.Phase = true, "Paused" },
			Status{Message: "waiting for the Rollout to resume"}},
		{"workloadRef not seen", 7, func(o *argoRollout) {
			o.Spec.WorkloadRef = &argoRef{Kind: KindDeployment, Name: "api"}
			o.Annotations = map[string]string{workloadGenerationAnnotation: "7"}
			o.Status.WorkloadObservedGeneration, o.Status.Phase = "6", "Healthy"
		}, Status{Message: "waiting for Argo Rollouts to observe generation 7 of the Deployment api (at 6)"}},
		{"workloadRef seen", 7, func(o *argoRollout) {
			o.Spec.WorkloadRef = &argoRef{Kind: KindDeployment, Name: "api"}
			o.Annotations = map[string]string{workloadGenerationAnnotation: "7"}
			o.Status.WorkloadObservedGeneration, o.Status.Phase = "7", "Healthy"
		}, Status{Done: true, Message: "healthy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &argoRollout{ObjectMeta: metav1.ObjectMeta{Name: "api", Generation: 3}, Status: argoStatus{ObservedGeneration: "3"}}
			tc.set(o)
			if diff := cmp.Diff(tc.want, Judge(o, tc.gen), cmp.AllowUnexported(Status{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
