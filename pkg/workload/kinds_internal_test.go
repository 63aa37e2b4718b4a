package workload

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// kindsLabel is the selector label of these tests.
const kindsLabel = "app.kubernetes.io/name"

// newOfKind returns an object of k named api with an init container and a
// container, as a target would hold it.
func newOfKind(t *testing.T, k *Kind) runtime.Object {
	t.Helper()
	o := k.example.DeepCopyObject()
	m, pod, ok := k.pod(o)
	if !ok {
		t.Fatalf("%s: pod does not recognise the kind's own example %T", k.name, o)
	}
	*m = metav1.ObjectMeta{Name: "api", Namespace: "ns", UID: "u1", Generation: 4, Labels: map[string]string{kindsLabel: "api"}}
	pod.InitContainers = []corev1.Container{{Name: "migrate", Image: "reg/m:1"}}
	pod.Containers = []corev1.Container{{Name: "app", Image: "reg/api:1"}, {Name: "side", Image: "reg/side:1"}}
	return o
}

// TestWorkloadKinds holds every entry of the table to what the rest of the
// package relies on: its example is its own kind and no other's, its GVR is
// what the Kubernetes scheme says of the kind, the image patch built from
// its template path changes exactly the named containers of its pod
// template, and what the watch cache keeps of it rebuilds an object of the
// same kind.
func TestWorkloadKinds(t *testing.T) {
	for i := range kinds {
		k := &kinds[i]
		t.Run(k.name, func(t *testing.T) {
			if got, j, err := Named(k.name); err != nil || got != k || j != i {
				t.Errorf("Named(%q) = %v, %d, %v", k.name, got, j, err)
			}
			if got := Of(k.example); got != k {
				t.Errorf("Of(%T) = %v, want the %s entry", k.example, got, k.name)
			}
			if (k.api == nil) == (k.crdAPI == nil) {
				t.Errorf("a kind is reached by api (client-go's scheme) or crdAPI (a CRD), not both or neither")
			}
			if k.api != nil {
				gvks, _, err := scheme.Scheme.ObjectKinds(k.example)
				if err != nil || len(gvks) != 1 {
					t.Fatalf("the scheme's kinds of %T: %v, %v", k.example, gvks, err)
				}
				if want := k.gvr.GroupVersion().WithKind(k.name); gvks[0] != want {
					t.Errorf("the scheme calls %T %v, the table %v", k.example, gvks[0], want)
				}
			}
			if (k.keep == nil) != (k.object == nil) || (k.keep == nil) != (k.patched != "") || (k.observed == nil) != (k.patched != "") {
				t.Errorf("keep, object and observed must be given for a kind with a rollout, and none for a kind done once patched (patched %q)", k.patched)
			}

			obj := newOfKind(t, k)
			original, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			body, err := PatchBody(k.name, "rev2", []Container{{Name: "app", Image: "reg/api:2"}, {Name: InitPrefix + "migrate", Image: "reg/m:2"}})
			if err != nil {
				t.Fatal(err)
			}
			patched, err := strategicpatch.StrategicMergePatch(original, body, k.example)
			if k.name == KindRollout { // a custom resource: the JSON patch rolloutOps makes of body
				var ops []byte
				if ops, err = rolloutOps(obj.(*argoRollout), body); err != nil {
					t.Fatal(err)
				}
				var p jsonpatch.Patch
				if p, err = jsonpatch.DecodePatch(ops); err != nil {
					t.Fatal(err)
				}
				patched, err = p.Apply(original)
			}
			if err != nil {
				t.Fatalf("applying %s to a %s: %v", body, k.name, err)
			}
			out := k.example.DeepCopyObject()
			if err := json.Unmarshal(patched, out); err != nil {
				t.Fatal(err)
			}
			w := k.Workload(out)
			want := []Container{{Name: InitPrefix + "migrate", Image: "reg/m:2"}, {Name: "app", Image: "reg/api:2"}, {Name: "side", Image: "reg/side:1"}}
			if diff := cmp.Diff(want, w.Containers); diff != "" {
				t.Errorf("containers after the image patch (-want +got):\n%s", diff)
			}
			m, _, _ := k.pod(out)
			if m.Annotations[RevisionAnnotation] != "rev2" {
				t.Errorf("revision annotation after the patch: %v", m.Annotations)
			}
			if w.Kind != k.name || w.APIVersion != k.APIVersion() {
				t.Errorf("workload kind %s %s, want %s %s", w.Kind, w.APIVersion, k.name, k.APIVersion())
			}

			stripped, err := Strip(kindsLabel)(obj)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := stripped.(*Cached)
			if !ok {
				t.Fatalf("strip left a %T as %T", obj, stripped)
			}
			rebuilt := c.Object()
			if Of(rebuilt) != k {
				t.Fatalf("the cache rebuilt a %s as %T", k.name, rebuilt)
			}
			if m, _, _ := k.pod(rebuilt); m.Name != "api" || m.Namespace != "ns" || m.Generation != 4 {
				t.Errorf("rebuilt metadata %+v", m)
			}
		})
	}
	if got, want := Names(Cluster{}), "Deployment, StatefulSet, DaemonSet or CronJob"; got != want {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	if got, want := Names(Cluster{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}), "Deployment, StatefulSet, DaemonSet, CronJob or Rollout"; got != want {
		t.Errorf("Names() with a dynamic client = %q, want %q", got, want)
	}
}
