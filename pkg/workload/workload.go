package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Workload is the part of a Deployment, StatefulSet, DaemonSet, CronJob or Rollout the
// planner and the registry keychain need.
type Workload struct {
	Kind, Namespace, Name string
	APIVersion            string
	UID                   string
	Labels                map[string]string
	Containers            []Container // init containers first
	ServiceAccount        string      // the pod template's
	PullSecrets           []corev1.LocalObjectReference
	CanaryPrimary         bool           // a Flagger Canary's primary (flagger.go): never planned
	Object                runtime.Object // the typed object, for rollout status (nil from a watch)
}

// Container is one container or init container of a pod template.
type Container struct {
	Name  string // InitPrefix + name for init containers
	Image string
}

// List lists every workload of kind in namespace: one API call. A cluster
// that cannot see the kind has none of it.
func List(ctx context.Context, t Cluster, namespace, kind string) ([]*Workload, error) {
	k, _, err := Named(kind)
	if err != nil {
		return nil, fmt.Errorf("listing workloads: %w", err)
	}
	api, ok := k.API(t, namespace)
	if !ok {
		return nil, nil
	}
	l, err := api.List(ctx, metav1.ListOptions{}) // a consistent read: a plan must see what was just applied
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", k.gvr.Resource, namespace, err)
	}
	items := api.Items(l)
	out := make([]*Workload, 0, len(items))
	for _, o := range items {
		out = append(out, k.Workload(o))
	}
	return out, nil
}

// Get reads one workload of kind by name: one API call. On a cluster that
// cannot see the kind it is not found.
func Get(ctx context.Context, t Cluster, kind string, key types.NamespacedName) (*Workload, error) {
	namespace, name := key.Namespace, key.Name
	k, _, err := Named(kind)
	if err != nil {
		return nil, fmt.Errorf("getting workload: %w", err)
	}
	api, ok := k.API(t, namespace)
	if !ok {
		return nil, apierrors.NewNotFound(k.gvr.GroupResource(), name)
	}
	o, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return k.Workload(o), nil
}
