package workload

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// cached is what a watch keeps of one workload: the workload Plan reads
// (kind, name, UID, the selector label, each container's name and image, the
// pod's ServiceAccount and imagePullSecrets) and what the rollout judgement
// reads (generation, deletion, replicas, update strategy, pause, progress
// deadline, status). Everything else — managed fields, other labels and
// annotations, the rest of the pod template, a CronJob's status — is
// dropped as the object arrives: a Deployment takes about a third of the
// memory of the typed object.
type Cached struct {
	metav1.ObjectMeta // name, namespace, UID, resourceVersion, generation, deletionTimestamp, the selector label
	w                 *Workload
	kind              *Kind
	replicas          *int32
	progressDeadline  *int32
	paused            bool
	stsStrategy       appsv1.StatefulSetUpdateStrategy
	dsStrategy        appsv1.DaemonSetUpdateStrategy
	status            any // the kind's status (*appsv1.DeploymentStatus, …); nil for a kind judged done once patched
}

// strip returns the transform of the watch cache: typed workloads in,
// *Cached out. It leaves anything else (a *Cached again, a tombstone) as it is.
func Strip(label string) cache.TransformFunc {
	return func(obj any) (any, error) {
		o, ok := obj.(runtime.Object)
		if !ok {
			return obj, nil
		}
		k := Of(o)
		if k == nil {
			return obj, nil
		}
		m, _, _ := k.pod(o)
		c := newCached(m, label, k.Workload(o))
		c.kind = k
		if k.keep != nil {
			k.keep(o, c)
		}
		return c, nil
	}
}

func newCached(m *metav1.ObjectMeta, label string, w *Workload) *Cached {
	c := &Cached{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp}}
	if v, ok := m.Labels[label]; ok {
		c.Labels = map[string]string{label: v}
	}
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, "stagehand.io/") {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[k] = v
		}
	}
	w.Labels, w.Object = c.Labels, nil // not the typed object: it is what is dropped
	c.w = w
	return c
}

// object rebuilds the typed object the rollout judgement reads.
func (c *Cached) Object() runtime.Object {
	meta := metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, UID: c.UID, Generation: c.Generation, DeletionTimestamp: c.DeletionTimestamp}
	if c.kind.object == nil {
		o := c.kind.example.DeepCopyObject()
		m, _, _ := c.kind.pod(o)
		*m = meta
		return o
	}
	return c.kind.object(c, meta)
}

// Workload is the workload the watch kept.
func (c *Cached) Workload() *Workload { return c.w }
