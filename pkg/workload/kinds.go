package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Kind describes one kind of workload a service maps to, once: how
// to reach it on a target (list, watch, get, patch), where its pod template
// is, what the watch cache keeps of it and how its rollout is judged. Every
// other file reads kinds through this table: adding a kind is one entry in
// kinds.
type Kind struct {
	name string                      // the Kind, e.g. "Deployment"
	gvr  schema.GroupVersionResource // its API group, version and resource
	// example is an empty object of the kind: the type a watch holds.
	example runtime.Object
	// api reaches the kind in a target's namespace; crdAPI, for a kind
	// served by a CustomResourceDefinition, reaches it through the target's
	// dynamic client (a target without one does not see the kind).
	api    func(c kubernetes.Interface, namespace string) API
	crdAPI func(t Cluster, namespace string) API
	// pod returns obj's metadata and pod template spec; ok is false when obj
	// is not of this kind.
	pod func(obj runtime.Object) (meta *metav1.ObjectMeta, spec *corev1.PodSpec, ok bool)
	// templatePath is the path under spec to the pod template: where the
	// image patch goes.
	templatePath []string
	// keep copies into c what the rollout judgement reads beyond the
	// metadata (replicas, strategy, pause, status); object rebuilds the typed
	// object from c and meta. Both nil for a kind judged done once patched.
	keep   func(obj runtime.Object, c *Cached)
	object func(c *Cached, meta metav1.ObjectMeta) runtime.Object
	// observed returns the generation obj's controller has observed.
	observed func(obj runtime.Object) int64
	// check is the kind's own judgement, after the generation check and
	// before kstatus: ok is true when it decided (a paused Deployment, an
	// OnDelete update strategy). nil: kstatus decides.
	check func(obj runtime.Object) (r Status, ok bool)
	// judge, when set, is the whole judgement of a kind whose status says
	// more than kstatus reads (a Rollout): gen is the generation of the
	// object its patchFn patched.
	judge func(obj runtime.Object, gen int64) Status
	// patchFn, when set, patches the kind instead of a strategic merge
	// patch of body (patchBody's) on the object itself; gen is the
	// generation judge waits for.
	patchFn func(ctx context.Context, t Cluster, key types.NamespacedName, body []byte) (obj runtime.Object, gen int64, err error)
	// patched, when not empty, says a patch is the whole rollout (a
	// CronJob): the rollout is done at once with this message.
	patched string
}

// API is a kind's calls in one namespace of one cluster: List and Watch
// are what an informer's ListWatch needs, Items the objects of a List.
type API struct {
	List  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Items func(list runtime.Object) []runtime.Object
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get   func(ctx context.Context, name string, opts metav1.GetOptions) (runtime.Object, error)
	Patch func(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error)
}

// typedClient is the part of a client-go typed client API needs.
type typedClient[T, L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// typed is the API of a client-go typed client; items lists the items
// of one of its lists.
func typed[T, L runtime.Object](c typedClient[T, L], items func(L) []runtime.Object) API {
	return API{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, opts) },
		Items: func(l runtime.Object) []runtime.Object {
			if l, ok := l.(L); ok {
				return items(l)
			}
			return nil
		},
		Watch: c.Watch,
		Get: func(ctx context.Context, name string, opts metav1.GetOptions) (runtime.Object, error) {
			return c.Get(ctx, name, opts)
		},
		Patch: func(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			return c.Patch(ctx, name, pt, body, opts)
		},
	}
}

// pointers returns a pointer to each item.
func pointers[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// kinds are the workload kinds, in the order they are listed.
var kinds = [...]Kind{
	{
		name:    KindDeployment,
		gvr:     appsv1.SchemeGroupVersion.WithResource("deployments"),
		example: &appsv1.Deployment{},
		api: func(c kubernetes.Interface, ns string) API {
			return typed(c.AppsV1().Deployments(ns), func(l *appsv1.DeploymentList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.Deployment); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *Cached) {
			o := obj.(*appsv1.Deployment)
			c.replicas, c.paused, c.progressDeadline = o.Spec.Replicas, o.Spec.Paused, o.Spec.ProgressDeadlineSeconds
			st := o.Status
			c.status = &st
		},
		object: func(c *Cached, meta metav1.ObjectMeta) runtime.Object {
			return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: c.replicas, Paused: c.paused,
				ProgressDeadlineSeconds: c.progressDeadline}, Status: *c.status.(*appsv1.DeploymentStatus)}
		},
		observed: func(obj runtime.Object) int64 { return obj.(*appsv1.Deployment).Status.ObservedGeneration },
		check: func(obj runtime.Object) (Status, bool) {
			if obj.(*appsv1.Deployment).Spec.Paused {
				return Status{Failed: true, Message: "the Deployment is paused: its rollout cannot progress"}, true
			}
			return Status{}, false
		},
	},
	{
		name:    KindStatefulSet,
		gvr:     appsv1.SchemeGroupVersion.WithResource("statefulsets"),
		example: &appsv1.StatefulSet{},
		api: func(c kubernetes.Interface, ns string) API {
			return typed(c.AppsV1().StatefulSets(ns), func(l *appsv1.StatefulSetList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.StatefulSet); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *Cached) {
			o := obj.(*appsv1.StatefulSet)
			c.replicas, c.stsStrategy = o.Spec.Replicas, o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		},
		object: func(c *Cached, meta metav1.ObjectMeta) runtime.Object {
			return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: c.replicas, UpdateStrategy: c.stsStrategy},
				Status: *c.status.(*appsv1.StatefulSetStatus)}
		},
		observed: func(obj runtime.Object) int64 { return obj.(*appsv1.StatefulSet).Status.ObservedGeneration },
		check:    statefulSetOnDelete,
	},
	{
		name:    KindDaemonSet,
		gvr:     appsv1.SchemeGroupVersion.WithResource("daemonsets"),
		example: &appsv1.DaemonSet{},
		api: func(c kubernetes.Interface, ns string) API {
			return typed(c.AppsV1().DaemonSets(ns), func(l *appsv1.DaemonSetList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.DaemonSet); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *Cached) {
			o := obj.(*appsv1.DaemonSet)
			c.dsStrategy = o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		},
		object: func(c *Cached, meta metav1.ObjectMeta) runtime.Object {
			return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{UpdateStrategy: c.dsStrategy},
				Status: *c.status.(*appsv1.DaemonSetStatus)}
		},
		observed: func(obj runtime.Object) int64 { return obj.(*appsv1.DaemonSet).Status.ObservedGeneration },
		check:    daemonSetOnDelete,
	},
	{
		name:    KindCronJob,
		gvr:     batchv1.SchemeGroupVersion.WithResource("cronjobs"),
		example: &batchv1.CronJob{},
		api: func(c kubernetes.Interface, ns string) API {
			return typed(c.BatchV1().CronJobs(ns), func(l *batchv1.CronJobList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*batchv1.CronJob); ok {
				return &o.ObjectMeta, &o.Spec.JobTemplate.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"jobTemplate", "spec", "template"},
		patched:      "job template updated",
	},
	rolloutKind(),
}

// Named returns the kind named name and its index in the table.
func Named(name string) (*Kind, int, error) {
	for i := range kinds {
		if kinds[i].name == name {
			return &kinds[i], i, nil
		}
	}
	return nil, -1, fmt.Errorf("unknown workload kind %q", name)
}

// Of returns obj's kind, or nil when obj is no workload.
func Of(obj runtime.Object) *Kind {
	for i := range kinds {
		if _, _, ok := kinds[i].pod(obj); ok {
			return &kinds[i]
		}
	}
	return nil
}

// Count is the number of workload kinds: At(i) for i in [0, Count) is each,
// in the order they are listed.
const Count = len(kinds)

// At returns the i-th kind of the table.
func At(i int) *Kind { return &kinds[i] }

// Name is the Kind, e.g. "Deployment".
func (k *Kind) Name() string { return k.name }

// GVR is the kind's API group, version and resource.
func (k *Kind) GVR() schema.GroupVersionResource { return k.gvr }

// Example is an empty object of the kind: the type a watch holds.
func (k *Kind) Example() runtime.Object { return k.example }

// Pod returns obj's metadata and pod template spec; ok is false when obj is
// not of this kind.
func (k *Kind) Pod(obj runtime.Object) (meta *metav1.ObjectMeta, spec *corev1.PodSpec, ok bool) {
	return k.pod(obj)
}

// TemplatePath is the path under spec to the kind's pod template: where an
// image patch goes.
func (k *Kind) TemplatePath() []string { return k.templatePath }

// Patched, when not empty, says a patch is the whole rollout (a CronJob):
// the rollout is done at once with this message.
func (k *Kind) Patched() string { return k.patched }

// API reaches the kind in namespace of c; ok is false when c cannot see it
// (a kind served by a CRD, on a cluster without a dynamic client).
func (k *Kind) API(c Cluster, namespace string) (api API, ok bool) {
	switch {
	case !k.SeenBy(c):
		return API{}, false
	case k.crdAPI != nil:
		return k.crdAPI(c, namespace), true
	}
	return k.api(c.Client, namespace), true
}

// SeenBy reports whether c can see the kind.
func (k *Kind) SeenBy(c Cluster) bool { return k.crdAPI == nil || c.Dynamic != nil }

// APIVersion is the kind's group/version, e.g. "apps/v1".
func (k *Kind) APIVersion() string { return k.gvr.GroupVersion().String() }

// Workload returns the workload of obj, which is of kind k.
func (k *Kind) Workload(obj runtime.Object) *Workload {
	m, pod, _ := k.pod(obj)
	cs := make([]Container, 0, len(pod.InitContainers)+len(pod.Containers))
	for _, c := range pod.InitContainers {
		cs = append(cs, Container{Name: InitPrefix + c.Name, Image: c.Image})
	}
	for _, c := range pod.Containers {
		cs = append(cs, Container{Name: c.Name, Image: c.Image})
	}
	return &Workload{
		Kind: k.name, APIVersion: k.APIVersion(), Namespace: m.Namespace, Name: m.Name, UID: string(m.UID),
		Labels: m.Labels, Containers: cs, ServiceAccount: pod.ServiceAccountName, PullSecrets: pod.ImagePullSecrets, Object: obj,
		CanaryPrimary: canaryPrimary(m),
	}
}

// Patch sends body, a strategic merge patch of the pod template under
// TemplatePath and the object's annotations, to the workload key of c as
// FieldManager, and returns the patched object and the generation its
// rollout is judged at (Judge's gen). A kind that takes no strategic merge
// patch (a Rollout) is patched its own way.
func (k *Kind) Patch(ctx context.Context, c Cluster, key types.NamespacedName, body []byte) (runtime.Object, int64, error) {
	api, ok := k.API(c, key.Namespace)
	if !ok {
		return nil, 0, fmt.Errorf("patching %s %s: the cluster cannot reach %s", k.name, key, k.gvr.Resource)
	}
	if k.patchFn != nil {
		return k.patchFn(ctx, c, key, body)
	}
	o, err := api.Patch(ctx, key.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, 0, err
	}
	m, _, _ := k.pod(o)
	return o, m.Generation, nil
}

// PatchBody is a strategic merge patch of a workload of kind naming only
// the containers of images (by name, InitPrefix+name for an init container;
// merged by name) with their new image, and the revision annotation: what
// Kind.Patch sends.
func PatchBody(kind, revision string, images []Container) ([]byte, error) {
	var containers, inits []map[string]string
	for _, c := range images {
		name, init := strings.CutPrefix(c.Name, InitPrefix)
		e := map[string]string{"name": name, "image": c.Image}
		if init {
			inits = append(inits, e)
		} else {
			containers = append(containers, e)
		}
	}
	pod := map[string]any{}
	if containers != nil {
		pod["containers"] = containers
	}
	if inits != nil {
		pod["initContainers"] = inits
	}
	k, _, err := Named(kind)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	spec := map[string]any{"spec": pod} // the pod template, under the kind's path in spec
	for i := len(k.templatePath) - 1; i >= 0; i-- {
		spec = map[string]any{k.templatePath[i]: spec}
	}
	b, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{RevisionAnnotation: revision}},
		"spec":     spec,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	return b, nil
}

// Names is "Deployment, StatefulSet, DaemonSet or CronJob": the kinds c
// can see (", CronJob or Rollout" with a dynamic client).
func Names(c Cluster) string {
	var names []string
	for i := range kinds {
		if kinds[i].SeenBy(c) {
			names = append(names, kinds[i].name)
		}
	}
	var b strings.Builder
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}
