package reconcile

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// strip returns the transform of the watch cache: it keeps of each workload
// only what Plan and the rollout judgement read — name, namespace, UID,
// resourceVersion, generation, deletionTimestamp, the selector label,
// Stagehand's own annotations, each container's name and image, the pod's
// ServiceAccount and imagePullSecrets (registry credentials), the replicas,
// update strategy, pause and progress deadline, and the status (none for a
// CronJob) — and drops the rest: managed fields, other labels and
// annotations, the pod template's metadata and everything else of its spec.
// It changes the object it is given, which is the informer's own decoded
// copy, and is idempotent.
func strip(label string) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			stripMeta(&o.ObjectMeta, label)
			o.Spec = appsv1.DeploymentSpec{Replicas: o.Spec.Replicas, Paused: o.Spec.Paused,
				ProgressDeadlineSeconds: o.Spec.ProgressDeadlineSeconds, Template: stripPod(o.Spec.Template)}
		case *appsv1.StatefulSet:
			stripMeta(&o.ObjectMeta, label)
			o.Spec = appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas, UpdateStrategy: o.Spec.UpdateStrategy, Template: stripPod(o.Spec.Template)}
		case *appsv1.DaemonSet:
			stripMeta(&o.ObjectMeta, label)
			o.Spec = appsv1.DaemonSetSpec{UpdateStrategy: o.Spec.UpdateStrategy, Template: stripPod(o.Spec.Template)}
		case *batchv1.CronJob:
			stripMeta(&o.ObjectMeta, label)
			o.Spec = batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: stripPod(o.Spec.JobTemplate.Spec.Template)}}}
			o.Status = batchv1.CronJobStatus{}
		}
		return obj, nil
	}
}

func stripMeta(m *metav1.ObjectMeta, label string) {
	kept := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp}
	if v, ok := m.Labels[label]; ok {
		kept.Labels = map[string]string{label: v}
	}
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, "stagehand.io/") {
			if kept.Annotations == nil {
				kept.Annotations = map[string]string{}
			}
			kept.Annotations[k] = v
		}
	}
	*m = kept
}

func stripPod(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	names := func(cs []corev1.Container) []corev1.Container {
		if cs == nil {
			return nil
		}
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Image: c.Image}
		}
		return out
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: names(t.Spec.InitContainers), Containers: names(t.Spec.Containers),
		ServiceAccountName: t.Spec.ServiceAccountName, ImagePullSecrets: t.Spec.ImagePullSecrets,
	}}
}
