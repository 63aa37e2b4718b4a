package workload

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// TestRolloutStatus covers the status rules on hand-made objects; the real
// controllers are exercised by the apply tests.
func TestRolloutStatus(t *testing.T) {
	two, part := int32(2), int32(1)
	dep := func(gen, observed int64, mut func(*appsv1.Deployment)) *appsv1.Deployment {
		pds := int32(600)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &two, ProgressDeadlineSeconds: &pds},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				}}}
		if mut != nil {
			mut(d)
		}
		return d
	}
	sts := func(mut func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: &two},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2,
				AvailableReplicas: 2, CurrentRevision: "b", UpdateRevision: "b"}}
		mut(s)
		return s
	}
	ds := func(mut func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
				UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}}
		mut(d)
		return d
	}
	onDeleteSTS := func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	}
	cases := []struct {
		name string
		obj  runtime.Object
		gen  int64
		want Status
	}{
		{"deployment not observed", dep(3, 2, nil), 3, Status{Message: "waiting for the controller to observe generation 3 (at 2)"}},
		{"deployment read before the patch", dep(2, 2, nil), 3, Status{Message: "waiting for the controller to observe generation 3 (at 2)"}},
		{"deployment done", dep(3, 3, nil), 3, Status{Done: true, Message: "deployment is available. Replicas: 2"}},
		{"deployment old replicas", dep(3, 3, func(d *appsv1.Deployment) { d.Status.Replicas = 3 }), 3, Status{Message: "pending termination: 1"}},
		{"deployment unavailable", dep(3, 3, func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }), 3, Status{Message: "available: 1/2"}},
		{"deployment paused", dep(3, 3, func(d *appsv1.Deployment) { d.Spec.Paused = true }), 3, Status{Failed: true, Message: "the Deployment is paused: its rollout cannot progress"}},
		{"deployment deadline", dep(3, 3, func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "too slow"}}
		}), 3, Status{Failed: true, Message: "progress deadline exceeded: too slow"}},
		{"deployment being deleted", dep(3, 3, func(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{Time: time.Unix(1e9, 0)} }), 3, Status{Failed: true, Message: "the Deployment is being deleted"}},
		{"statefulset done", sts(func(*appsv1.StatefulSet) {}), 2, Status{Done: true, Message: "all replicas scheduled as expected. Replicas: 2"}},
		{"statefulset pod terminating", sts(func(s *appsv1.StatefulSet) { s.Status.Replicas = 3 }), 2, Status{Message: "pending termination: 1"}},
		{"statefulset partition", sts(func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &part}}
			s.Status.UpdatedReplicas, s.Status.CurrentRevision = 1, "a"
		}), 2, Status{Done: true, Message: "partition rollout complete. updated: 1"}},
		{"statefulset revisions differ", sts(func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = "a" }), 2, Status{Message: "waiting for updated revision to match current"}},
		{"statefulset on delete, old pods", sts(func(s *appsv1.StatefulSet) { onDeleteSTS(s); s.Status.UpdatedReplicas = 0 }), 2,
			Status{OnDelete: true, Message: "patched, pods change when deleted (updateStrategy OnDelete): 0 of 2 pods run the new revision"}},
		{"statefulset on delete, pods replaced", sts(onDeleteSTS), 2,
			Status{Done: true, Message: "2 of 2 pods run the new revision and are ready (updateStrategy OnDelete)"}},
		{"statefulset on delete, a replaced pod not ready", sts(func(s *appsv1.StatefulSet) { onDeleteSTS(s); s.Status.ReadyReplicas = 1 }), 2,
			Status{OnDelete: true, Message: "patched, pods change when deleted (updateStrategy OnDelete): 2 of 2 pods run the new revision"}},
		{"daemonset on delete", ds(func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
			d.Status.UpdatedNumberScheduled = 1
		}), 2, Status{OnDelete: true, Message: "patched, pods change when deleted (updateStrategy OnDelete): 1 of 3 pods run the new revision"}},
		{"daemonset updating", ds(func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled = 1 }), 2, Status{Message: "updated: 1/3"}},
		{"daemonset done", ds(func(*appsv1.DaemonSet) {}), 2, Status{Done: true, Message: "all replicas scheduled as expected. Replicas: 3"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Judge(tt.obj, tt.gen), cmp.AllowUnexported(Status{})); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// Where Stagehand's judgement deliberately differs from kstatus.
const (
	stricterGeneration = "the controller has not observed our patch's generation (or reports none): waiting"
	stricterPaused     = "a paused Deployment: failed, where kstatus waits forever"
	stricterOnDelete   = "OnDelete with pods not all on the new revision: patched-on-delete, not done"
)

// TestRolloutStatusAgreesWithKstatus judges 20,000 random but realistic
// statuses of Deployments, StatefulSets and DaemonSets both ways and
// requires agreement (done = Current, failed = Failed or Terminating, else
// going) except in the cases where Stagehand is deliberately stricter; and
// never may Stagehand call done what kstatus does not call Current.
func TestRolloutStatusAgreesWithKstatus(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(20, 2026))
	agree := 0
	stricter := map[string]int{}
	for i := range n {
		obj, gen := randomWorkload(rng)
		got := Judge(obj, gen)
		u, err := toUnstructured(obj, Of(obj))
		if err != nil {
			t.Fatal(err)
		}
		ks, err := kstatus.Compute(u)
		if err != nil {
			t.Fatalf("%d: kstatus: %v", i, err)
		}
		if got.Done && ks.Status != kstatus.CurrentStatus {
			t.Errorf("%d: Stagehand calls done what kstatus calls %s (%s): %+v", i, ks.Status, ks.Message, obj)
		}
		want := fromResult(ks, Of(obj).name)
		if got.Done == want.Done && got.Failed == want.Failed && !got.OnDelete {
			agree++
			continue
		}
		why := deliberate(obj, gen, got)
		if why == "" {
			t.Errorf("%d: Stagehand %+v, kstatus %s (%s), no deliberate difference explains it: %+v", i, got, ks.Status, ks.Message, obj)
			continue
		}
		stricter[why]++
	}
	t.Logf("agreement with kstatus on %d random statuses: %d (%.1f %%); deliberately stricter: %v", n, agree, 100*float64(agree)/n, stricter)
	for _, why := range []string{stricterGeneration, stricterPaused, stricterOnDelete} {
		if stricter[why] == 0 {
			t.Errorf("the generator never produced the case %q", why)
		}
	}
}

// deliberate names the deliberate difference that applies to obj, or "".
func deliberate(obj runtime.Object, gen int64, got Status) string {
	var meta metav1.Object
	var observed int64
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, observed = o, o.Status.ObservedGeneration
	case *appsv1.StatefulSet:
		meta, observed = o, o.Status.ObservedGeneration
	case *appsv1.DaemonSet:
		meta, observed = o, o.Status.ObservedGeneration
	}
	if meta.GetDeletionTimestamp() != nil {
		return ""
	}
	if observed < max(gen, meta.GetGeneration()) && !got.Done && !got.Failed {
		return stricterGeneration
	}
	if d, ok := obj.(*appsv1.Deployment); ok && d.Spec.Paused && got.Failed {
		return stricterPaused
	}
	if got.OnDelete {
		return stricterOnDelete
	}
	return ""
}

// randomWorkload returns a workload as a controller could report it in the
// middle or at the end of a rollout, and the generation of "our" patch.
func randomWorkload(rng *rand.Rand) (runtime.Object, int64) {
	pick := func(weights ...int) int { // index chosen with the given weights
		total := 0
		for _, w := range weights {
			total += w
		}
		r := rng.IntN(total)
		for i, w := range weights {
			if r < w {
				return i
			}
			r -= w
		}
		return len(weights) - 1
	}
	upTo := func(n int32) int32 { return rng.Int32N(max(n, 0) + 1) }
	gen := int64(1 + rng.IntN(5))
	meta := metav1.ObjectMeta{Name: "w", Namespace: "ns", Generation: gen}
	if pick(98, 2) == 1 {
		meta.DeletionTimestamp = &metav1.Time{Time: time.Unix(1e9, 0)}
	}
	observed := [...]int64{gen, gen - 1, 0}[pick(80, 15, 5)]
	patchGen := [...]int64{gen, gen + 1, gen - 1}[pick(85, 10, 5)]
	var spec *int32
	want := int32(1)
	if pick(1, 9) == 1 {
		want = rng.Int32N(6)
		spec = &want
	}
	complete := pick(6, 4) == 1
	switch pick(1, 1, 1) {
	case 0:
		d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: spec}}
		if pick(85, 15) == 0 {
			pds := int32(600)
			d.Spec.ProgressDeadlineSeconds = &pds
		}
		d.Spec.Paused = pick(95, 5) == 1
		s := &d.Status
		s.ObservedGeneration = observed
		if complete {
			s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas = want, want, want, want
		} else {
			s.Replicas = max(0, want+rng.Int32N(4)-1)
			s.UpdatedReplicas, s.ReadyReplicas = upTo(s.Replicas), upTo(s.Replicas)
			s.AvailableReplicas = upTo(s.ReadyReplicas)
		}
		s.UnavailableReplicas = max(0, s.Replicas-s.AvailableReplicas)
		avail := corev1.ConditionTrue
		if s.AvailableReplicas < want-1 || pick(9, 1) == 1 {
			avail = corev1.ConditionFalse
		}
		prog := [...]appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: "DeploymentPaused"},
		}[pick(6, 3, 1, 1)]
		if complete && pick(1, 4) == 1 {
			prog, avail = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}, corev1.ConditionTrue
		}
		if pick(1, 19) == 1 {
			s.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: avail}, prog}
		}
		return d, patchGen
	case 1:
		st := &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: spec}}
		switch pick(6, 2, 2, 1) {
		case 0:
			st.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		case 1:
			p := upTo(want)
			st.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &p}}
		case 2:
			st.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		}
		s := &st.Status
		s.ObservedGeneration = observed
		s.CurrentRevision, s.UpdateRevision = "web-1", "web-2"
		if complete {
			s.Replicas, s.ReadyReplicas, s.CurrentReplicas, s.UpdatedReplicas, s.AvailableReplicas = want, want, want, want, want
			if pick(1, 3) == 1 {
				s.CurrentRevision = s.UpdateRevision
			}
			if pick(9, 1) == 1 {
				s.Replicas++ // a pod still terminating
			}
		} else {
			s.Replicas = max(0, want+rng.Int32N(3)-1)
			s.ReadyReplicas = upTo(s.Replicas)
			s.AvailableReplicas = upTo(s.ReadyReplicas)
			s.UpdatedReplicas = upTo(s.Replicas)
			s.CurrentReplicas = s.Replicas - s.UpdatedReplicas
		}
		return st, patchGen
	default:
		d := &appsv1.DaemonSet{ObjectMeta: meta}
		if pick(3, 1) == 1 {
			d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
		} else {
			d.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
		}
		s := &d.Status
		s.ObservedGeneration = observed
		s.DesiredNumberScheduled = rng.Int32N(6)
		if complete {
			s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable =
				s.DesiredNumberScheduled, s.DesiredNumberScheduled, s.DesiredNumberScheduled, s.DesiredNumberScheduled
		} else {
			s.CurrentNumberScheduled = upTo(s.DesiredNumberScheduled)
			s.UpdatedNumberScheduled = upTo(s.CurrentNumberScheduled)
			s.NumberReady = upTo(s.CurrentNumberScheduled)
			s.NumberAvailable = upTo(s.NumberReady)
		}
		s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
		return d, patchGen
	}
}
