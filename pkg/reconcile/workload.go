package reconcile

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// kinds are the workload kinds, in the order they are listed.
var kinds = [...]string{KindDeployment, KindStatefulSet, KindDaemonSet, KindCronJob}

// workload is the part of a Deployment, StatefulSet, DaemonSet or CronJob the
// planner and the registry keychain need.
type workload struct {
	Kind, Namespace, Name string
	APIVersion            string
	UID                   string
	Labels                map[string]string
	Containers            []podContainer // init containers first
	ServiceAccount        string         // the pod template's
	PullSecrets           []corev1.LocalObjectReference
	obj                   runtime.Object // the typed object, for rollout status (nil from a watch)
}

// podContainer is one container or init container of a pod template.
type podContainer struct {
	Name  string // InitPrefix + name for init containers
	Image string
}

func (w *workload) containers() []podContainer { return w.Containers }

// listWorkloads lists every workload of kind in namespace: one API call.
func listWorkloads(ctx context.Context, c kubernetes.Interface, namespace, kind string) ([]*workload, error) {
	var out []*workload
	opts := metav1.ListOptions{} // a consistent read: a plan must see what was just applied
	switch kind {
	case KindDeployment:
		l, err := c.AppsV1().Deployments(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing deployments in %s: %w", namespace, err)
		}
		for i := range l.Items {
			out = append(out, fromDeployment(&l.Items[i]))
		}
	case KindStatefulSet:
		l, err := c.AppsV1().StatefulSets(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing statefulsets in %s: %w", namespace, err)
		}
		for i := range l.Items {
			out = append(out, fromStatefulSet(&l.Items[i]))
		}
	case KindDaemonSet:
		l, err := c.AppsV1().DaemonSets(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing daemonsets in %s: %w", namespace, err)
		}
		for i := range l.Items {
			out = append(out, fromDaemonSet(&l.Items[i]))
		}
	case KindCronJob:
		l, err := c.BatchV1().CronJobs(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing cronjobs in %s: %w", namespace, err)
		}
		for i := range l.Items {
			out = append(out, fromCronJob(&l.Items[i]))
		}
	default:
		return nil, fmt.Errorf("listing workloads: unknown kind %q", kind)
	}
	return out, nil
}

func fromMeta(kind, apiVersion string, m *metav1.ObjectMeta, pod *corev1.PodSpec, obj runtime.Object) *workload {
	cs := make([]podContainer, 0, len(pod.InitContainers)+len(pod.Containers))
	for _, c := range pod.InitContainers {
		cs = append(cs, podContainer{Name: InitPrefix + c.Name, Image: c.Image})
	}
	for _, c := range pod.Containers {
		cs = append(cs, podContainer{Name: c.Name, Image: c.Image})
	}
	return &workload{
		Kind: kind, APIVersion: apiVersion, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID),
		Labels: m.Labels, Containers: cs, ServiceAccount: pod.ServiceAccountName, PullSecrets: pod.ImagePullSecrets, obj: obj,
	}
}

func fromDeployment(d *appsv1.Deployment) *workload {
	return fromMeta(KindDeployment, "apps/v1", &d.ObjectMeta, &d.Spec.Template.Spec, d)
}

func fromStatefulSet(s *appsv1.StatefulSet) *workload {
	return fromMeta(KindStatefulSet, "apps/v1", &s.ObjectMeta, &s.Spec.Template.Spec, s)
}

func fromDaemonSet(d *appsv1.DaemonSet) *workload {
	return fromMeta(KindDaemonSet, "apps/v1", &d.ObjectMeta, &d.Spec.Template.Spec, d)
}

func fromCronJob(c *batchv1.CronJob) *workload {
	return fromMeta(KindCronJob, "batch/v1", &c.ObjectMeta, &c.Spec.JobTemplate.Spec.Template.Spec, c)
}

// getWorkload reads one workload of kind by name: one API call.
func getWorkload(ctx context.Context, c kubernetes.Interface, namespace, kind, name string) (*workload, error) {
	opts := metav1.GetOptions{}
	switch kind {
	case KindDeployment:
		o, err := c.AppsV1().Deployments(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		return fromDeployment(o), nil
	case KindStatefulSet:
		o, err := c.AppsV1().StatefulSets(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		return fromStatefulSet(o), nil
	case KindDaemonSet:
		o, err := c.AppsV1().DaemonSets(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		return fromDaemonSet(o), nil
	case KindCronJob:
		o, err := c.BatchV1().CronJobs(namespace).Get(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		return fromCronJob(o), nil
	}
	return nil, fmt.Errorf("getting workload: unknown kind %q", kind)
}
