package workload

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStripKeepsWhatIsRead: the watch's transform keeps the workload Plan
// reads and, rebuilt, an object the rollout judgement judges exactly like
// the full one (on the property test's random statuses); it drops the rest
// and is idempotent.
func TestStripKeepsWhatIsRead(t *testing.T) {
	const label = "app.kubernetes.io/name"
	two := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 3,
			Labels:        map[string]string{label: "api", "team": "a"},
			Annotations:   map[string]string{RevisionAnnotation: "r1", "kubectl.kubernetes.io/last-applied-configuration": "{…}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
				InitContainers:     []corev1.Container{{Name: "migrate", Image: "reg/m:1", Command: []string{"migrate"}}},
				Containers:         []corev1.Container{{Name: "app", Image: "reg/api:1", Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}},
				ServiceAccountName: "api", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			}}},
	}
	out, err := Strip(label)(d.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	c := out.(*Cached)
	want := &Workload{Kind: KindDeployment, APIVersion: "apps/v1", Namespace: "ns", Name: "api", UID: "u1",
		Labels:         map[string]string{label: "api"},
		Containers:     []Container{{Name: "init:migrate", Image: "reg/m:1"}, {Name: "app", Image: "reg/api:1"}},
		ServiceAccount: "api", PullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
	if diff := cmp.Diff(want, c.w, cmp.AllowUnexported(Workload{})); diff != "" {
		t.Errorf("workload (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{RevisionAnnotation: "r1"}, c.Annotations); diff != "" || c.ManagedFields != nil {
		t.Errorf("annotations (-want +got):\n%s; managed fields %v", diff, c.ManagedFields)
	}
	if again, _ := Strip(label)(c); again != c {
		t.Error("strip is not idempotent on its own output")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		obj, gen := randomWorkload(rng)
		full := obj.DeepCopyObject()
		out, err := Strip(label)(obj)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Judge(full, gen), Judge(out.(*Cached).Object(), gen), cmp.AllowUnexported(Status{})); diff != "" {
			t.Fatalf("%d: judgement of the stripped object differs (-full +stripped):\n%s\n%+v", i, diff, full)
		}
	}
}
