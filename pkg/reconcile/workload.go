package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// workload is the part of a Deployment, StatefulSet, DaemonSet, CronJob or Rollout the
// planner and the registry keychain need.
type workload struct {
	Kind, Namespace, Name string
	APIVersion            string
	UID                   string
	Labels                map[string]string
	Containers            []podContainer // init containers first
	ServiceAccount        string         // the pod template's
	PullSecrets           []corev1.LocalObjectReference
	canaryPrimary         bool           // a Flagger Canary's primary (flagger.go): never planned
	obj                   runtime.Object // the typed object, for rollout status (nil from a watch)
}

// podContainer is one container or init container of a pod template.
type podContainer struct {
	Name  string // InitPrefix + name for init containers
	Image string
}

func (w *workload) containers() []podContainer { return w.Containers }

// listWorkloads lists every workload of kind in namespace: one API call.
// A target that cannot see the kind has none of it.
func listWorkloads(ctx context.Context, t Target, namespace, kind string) ([]*workload, error) {
	k, _, err := kindNamed(kind)
	if err != nil {
		return nil, fmt.Errorf("listing workloads: %w", err)
	}
	api, ok := k.apiOf(t, namespace)
	if !ok {
		return nil, nil
	}
	l, err := api.list(ctx, metav1.ListOptions{}) // a consistent read: a plan must see what was just applied
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", k.gvr.Resource, namespace, err)
	}
	items := api.items(l)
	out := make([]*workload, 0, len(items))
	for _, o := range items {
		out = append(out, k.workload(o))
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
		canaryPrimary: canaryPrimary(m),
	}
}

// getWorkload reads one workload of kind by name: one API call. On a target
// that cannot see the kind it is not found.
func getWorkload(ctx context.Context, t Target, namespace, kind, name string) (*workload, error) {
	k, _, err := kindNamed(kind)
	if err != nil {
		return nil, fmt.Errorf("getting workload: %w", err)
	}
	api, ok := k.apiOf(t, namespace)
	if !ok {
		return nil, apierrors.NewNotFound(k.gvr.GroupResource(), name)
	}
	o, err := api.get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return k.workload(o), nil
}
