package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRolloutStatus covers the status rules on hand-made objects; the real
// controllers are exercised by the apply tests.
func TestRolloutStatus(t *testing.T) {
	two := int32(2)
	part := int32(1)
	dep := func(gen, observed int64, mut func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &two},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}}
		if mut != nil {
			mut(d)
		}
		return d
	}
	cases := []struct {
		name string
		obj  any
		gen  int64
		want rollout
	}{
		{"deployment not observed", dep(3, 2, nil), 3, rollout{msg: "waiting for the controller to observe generation 3 (at 2)"}},
		{"deployment done", dep(3, 3, nil), 3, rollout{done: true, msg: "2 of 2 replicas updated and available"}},
		{"deployment old replicas", dep(3, 3, func(d *appsv1.Deployment) { d.Status.Replicas = 3 }), 3, rollout{msg: "1 old replicas pending termination"}},
		{"deployment unavailable", dep(3, 3, func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }), 3, rollout{msg: "1 of 2 replicas available"}},
		{"deployment paused", dep(3, 3, func(d *appsv1.Deployment) { d.Spec.Paused = true }), 3, rollout{failed: true, msg: "the Deployment is paused: its rollout cannot progress"}},
		{"deployment deadline", dep(3, 3, func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "too slow"}}
		}), 3, rollout{failed: true, msg: "progress deadline exceeded: too slow"}},
		{"statefulset partition", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec: appsv1.StatefulSetSpec{Replicas: &two, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &part}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdatedReplicas: 1}}, 2, rollout{done: true, msg: "partitioned rollout: 1 replicas updated"}},
		{"statefulset revisions differ", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: &two},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdatedReplicas: 2, ReadyReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}}, 2, rollout{msg: "2 of 2 replicas updated"}},
		{"daemonset on delete", &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:   appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 2}}, 2, rollout{done: true, msg: "updateStrategy OnDelete: pods change when deleted"}},
		{"daemonset updating", &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1}}, 2, rollout{msg: "1 of 3 pods updated"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, rolloutStatus(tt.obj, tt.gen), cmp.AllowUnexported(rollout{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
