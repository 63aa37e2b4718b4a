package reconcile

import (
	"context"
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

// workloadKind describes one kind of workload a service maps to, once: how
// to reach it on a target (list, watch, get, patch), where its pod template
// is, what the watch cache keeps of it and how its rollout is judged. Every
// other file reads kinds through this table: adding a kind is one entry in
// workloadKinds.
type workloadKind struct {
	name string                      // the Kind, e.g. "Deployment"
	gvr  schema.GroupVersionResource // its API group, version and resource
	// example is an empty object of the kind: the type a watch holds.
	example runtime.Object
	// api reaches the kind in a target's namespace; crdAPI, for a kind
	// served by a CustomResourceDefinition, reaches it through the target's
	// dynamic client (a target without one does not see the kind).
	api    func(c kubernetes.Interface, namespace string) kindAPI
	crdAPI func(t Target, namespace string) kindAPI
	// pod returns obj's metadata and pod template spec; ok is false when obj
	// is not of this kind.
	pod func(obj runtime.Object) (meta *metav1.ObjectMeta, spec *corev1.PodSpec, ok bool)
	// templatePath is the path under spec to the pod template: where the
	// image patch goes.
	templatePath []string
	// keep copies into c what the rollout judgement reads beyond the
	// metadata (replicas, strategy, pause, status); object rebuilds the typed
	// object from c and meta. Both nil for a kind judged done once patched.
	keep   func(obj runtime.Object, c *cached)
	object func(c *cached, meta metav1.ObjectMeta) runtime.Object
	// observed returns the generation obj's controller has observed.
	observed func(obj runtime.Object) int64
	// check is the kind's own judgement, after the generation check and
	// before kstatus: ok is true when it decided (a paused Deployment, an
	// OnDelete update strategy). nil: kstatus decides.
	check func(obj runtime.Object) (r rollout, ok bool)
	// judge, when set, is the whole judgement of a kind whose status says
	// more than kstatus reads (a Rollout): gen is the generation of the
	// object its patchFn patched.
	judge func(obj runtime.Object, gen int64) rollout
	// patchFn, when set, patches the kind instead of a strategic merge
	// patch of body (patchBody's) on the object itself; gen is the
	// generation judge waits for.
	patchFn func(ctx context.Context, t Target, namespace, name string, body []byte) (obj runtime.Object, gen int64, err error)
	// patched, when not empty, says a patch is the whole rollout (a
	// CronJob): the rollout is done at once with this message.
	patched string
}

// kindAPI is a kind's calls in one namespace of one target.
type kindAPI struct {
	list  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	items func(list runtime.Object) []runtime.Object
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	get   func(ctx context.Context, name string, opts metav1.GetOptions) (runtime.Object, error)
	patch func(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error)
}

// typedClient is the part of a client-go typed client kindAPI needs.
type typedClient[T, L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// typed is the kindAPI of a client-go typed client; items lists the items
// of one of its lists.
func typed[T, L runtime.Object](c typedClient[T, L], items func(L) []runtime.Object) kindAPI {
	return kindAPI{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, opts) },
		items: func(l runtime.Object) []runtime.Object {
			if l, ok := l.(L); ok {
				return items(l)
			}
			return nil
		},
		watch: c.Watch,
		get: func(ctx context.Context, name string, opts metav1.GetOptions) (runtime.Object, error) {
			return c.Get(ctx, name, opts)
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
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

// workloadKinds are the workload kinds, in the order they are listed.
var workloadKinds = [...]workloadKind{
	{
		name:    KindDeployment,
		gvr:     appsv1.SchemeGroupVersion.WithResource("deployments"),
		example: &appsv1.Deployment{},
		api: func(c kubernetes.Interface, ns string) kindAPI {
			return typed(c.AppsV1().Deployments(ns), func(l *appsv1.DeploymentList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.Deployment); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *cached) {
			o := obj.(*appsv1.Deployment)
			c.replicas, c.paused, c.progressDeadline = o.Spec.Replicas, o.Spec.Paused, o.Spec.ProgressDeadlineSeconds
			st := o.Status
			c.status = &st
		},
		object: func(c *cached, meta metav1.ObjectMeta) runtime.Object {
			return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: c.replicas, Paused: c.paused,
				ProgressDeadlineSeconds: c.progressDeadline}, Status: *c.status.(*appsv1.DeploymentStatus)}
		},
		observed: func(obj runtime.Object) int64 { return obj.(*appsv1.Deployment).Status.ObservedGeneration },
		check: func(obj runtime.Object) (rollout, bool) {
			if obj.(*appsv1.Deployment).Spec.Paused {
				return rollout{failed: true, msg: "the Deployment is paused: its rollout cannot progress"}, true
			}
			return rollout{}, false
		},
	},
	{
		name:    KindStatefulSet,
		gvr:     appsv1.SchemeGroupVersion.WithResource("statefulsets"),
		example: &appsv1.StatefulSet{},
		api: func(c kubernetes.Interface, ns string) kindAPI {
			return typed(c.AppsV1().StatefulSets(ns), func(l *appsv1.StatefulSetList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.StatefulSet); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *cached) {
			o := obj.(*appsv1.StatefulSet)
			c.replicas, c.stsStrategy = o.Spec.Replicas, o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		},
		object: func(c *cached, meta metav1.ObjectMeta) runtime.Object {
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
		api: func(c kubernetes.Interface, ns string) kindAPI {
			return typed(c.AppsV1().DaemonSets(ns), func(l *appsv1.DaemonSetList) []runtime.Object { return pointers(l.Items) })
		},
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*appsv1.DaemonSet); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *cached) {
			o := obj.(*appsv1.DaemonSet)
			c.dsStrategy = o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		},
		object: func(c *cached, meta metav1.ObjectMeta) runtime.Object {
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
		api: func(c kubernetes.Interface, ns string) kindAPI {
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

// kindNamed returns the kind named name and its index in workloadKinds.
func kindNamed(name string) (*workloadKind, int, error) {
	for i := range workloadKinds {
		if workloadKinds[i].name == name {
			return &workloadKinds[i], i, nil
		}
	}
	return nil, -1, fmt.Errorf("unknown workload kind %q", name)
}

// kindOfObject returns obj's kind, or nil when obj is no workload.
func kindOfObject(obj runtime.Object) *workloadKind {
	for i := range workloadKinds {
		if _, _, ok := workloadKinds[i].pod(obj); ok {
			return &workloadKinds[i]
		}
	}
	return nil
}

// apiOf reaches the kind in namespace of t; ok is false when t cannot see
// it (a kind served by a CRD, on a target without a dynamic client).
func (k *workloadKind) apiOf(t Target, namespace string) (api kindAPI, ok bool) {
	switch {
	case !k.seenBy(t):
		return kindAPI{}, false
	case k.crdAPI != nil:
		return k.crdAPI(t, namespace), true
	}
	return k.api(t.Client, namespace), true
}

// seenBy reports whether t can see the kind.
func (k *workloadKind) seenBy(t Target) bool { return k.crdAPI == nil || t.Dynamic != nil }

// apiVersion is the kind's group/version, e.g. "apps/v1".
func (k *workloadKind) apiVersion() string { return k.gvr.GroupVersion().String() }

// workload returns the workload of obj, which is of kind k.
func (k *workloadKind) workload(obj runtime.Object) *workload {
	m, pod, _ := k.pod(obj)
	return fromMeta(k.name, k.apiVersion(), m, pod, obj)
}

// kindNames is "Deployment, StatefulSet, DaemonSet or CronJob": the kinds t
// can see (", CronJob or Rollout" with a dynamic client).
func kindNames(t Target) string {
	var names []string
	for i := range workloadKinds {
		if workloadKinds[i].seenBy(t) {
			names = append(names, workloadKinds[i].name)
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
