package reconcile

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
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
type cached struct {
	metav1.ObjectMeta // name, namespace, UID, resourceVersion, generation, deletionTimestamp, the selector label
	w                 *workload
	replicas          *int32
	progressDeadline  *int32
	paused            bool
	stsStrategy       appsv1.StatefulSetUpdateStrategy
	dsStrategy        appsv1.DaemonSetUpdateStrategy
	status            any // *appsv1.DeploymentStatus, *appsv1.StatefulSetStatus, *appsv1.DaemonSetStatus; nil for a CronJob
}

// strip returns the transform of the watch cache: typed workloads in,
// *cached out. It leaves anything else (a *cached again, a tombstone) as it is.
func strip(label string) cache.TransformFunc {
	return func(obj any) (any, error) {
		var c *cached
		switch o := obj.(type) {
		case *appsv1.Deployment:
			c = newCached(&o.ObjectMeta, label, fromDeployment(o))
			c.replicas, c.paused, c.progressDeadline = o.Spec.Replicas, o.Spec.Paused, o.Spec.ProgressDeadlineSeconds
			st := o.Status
			c.status = &st
		case *appsv1.StatefulSet:
			c = newCached(&o.ObjectMeta, label, fromStatefulSet(o))
			c.replicas, c.stsStrategy = o.Spec.Replicas, o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		case *appsv1.DaemonSet:
			c = newCached(&o.ObjectMeta, label, fromDaemonSet(o))
			c.dsStrategy = o.Spec.UpdateStrategy
			st := o.Status
			c.status = &st
		case *batchv1.CronJob:
			c = newCached(&o.ObjectMeta, label, fromCronJob(o))
		default:
			return obj, nil
		}
		return c, nil
	}
}

func newCached(m *metav1.ObjectMeta, label string, w *workload) *cached {
	c := &cached{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
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
	w.Labels, w.obj = c.Labels, nil // not the typed object: it is what is dropped
	c.w = w
	return c
}

// object rebuilds the typed object the rollout judgement reads.
func (c *cached) object() runtime.Object {
	meta := metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, UID: c.UID, Generation: c.Generation, DeletionTimestamp: c.DeletionTimestamp}
	switch s := c.status.(type) {
	case *appsv1.DeploymentStatus:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: c.replicas, Paused: c.paused,
			ProgressDeadlineSeconds: c.progressDeadline}, Status: *s}
	case *appsv1.StatefulSetStatus:
		return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: c.replicas, UpdateStrategy: c.stsStrategy}, Status: *s}
	case *appsv1.DaemonSetStatus:
		return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{UpdateStrategy: c.dsStrategy}, Status: *s}
	}
	return &batchv1.CronJob{ObjectMeta: meta}
}
