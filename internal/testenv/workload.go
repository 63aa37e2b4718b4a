package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceLabel is the label Stagehand finds a service's workloads by when
// workloads.selectorLabel is not set.
const ServiceLabel = "app.kubernetes.io/name"

// Deployment returns a Deployment named name and labelled as service name,
// whose pods run image in one container also called name. Replicas are left
// to the API server's default (one); set a namespace or change what a test
// needs before creating it.
func Deployment(name, image string) *appsv1.Deployment {
	labels := map[string]string{ServiceLabel: name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}},
			},
		},
	}
}

// CreateDeployment creates Deployment(name, image) in namespace ns and
// fails tb when the API server refuses it.
func (e *Env) CreateDeployment(tb testing.TB, ns, name, image string) *appsv1.Deployment {
	tb.Helper()
	d, err := e.Clientset.AppsV1().Deployments(ns).Create(context.Background(), Deployment(name, image), metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("creating deployment %s/%s: %v", ns, name, err)
	}
	return d
}

// Image returns the image of the first container of Deployment ns/name.
func (e *Env) Image(tb testing.TB, ns, name string) string {
	tb.Helper()
	d, err := e.Clientset.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		tb.Fatalf("reading deployment %s/%s: %v", ns, name, err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// WaitFor polls cond until it holds, and fails tb, naming what it waited
// for, when timeout passes first.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// DescribeRollout says where a Deployment's rollout stands, for a test that
// gave up waiting on it: the Deployment's status, its ReplicaSets, its
// namespace's pods, and the end of the logs of the processes that move a
// rollout (controller-manager, scheduler, kwok) when WithRollouts runs them.
func (e *Env) DescribeRollout(ctx context.Context, ns, name string) string {
	var b strings.Builder
	if d, err := e.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		fmt.Fprintf(&b, "deployment %s/%s: %v\n", ns, name, err)
	} else {
		s := d.Status
		fmt.Fprintf(&b, "deployment %s/%s: generation %d observed %d, replicas %d updated %d ready %d available %d\n",
			ns, name, d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
		for _, c := range s.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if rss, err := e.Clientset.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, rs := range rss.Items {
			fmt.Fprintf(&b, "replicaset %s: spec %d, replicas %d ready %d available %d\n",
				rs.Name, ptrOr(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas)
		}
	}
	if pods, err := e.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s: node %q phase %s deleting %t", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
			for _, c := range p.Status.Conditions {
				fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
			}
			b.WriteString("\n")
		}
	}
	for _, p := range e.procs {
		switch p.name {
		case "kube-controller-manager", "kube-scheduler", "kwok":
			fmt.Fprintf(&b, "--- %s (running %t), last lines:\n%s\n", p.name, p.running(), p.tail(3000))
		}
	}
	return b.String()
}

func ptrOr(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
