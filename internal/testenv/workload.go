package testenv

import (
	"context"
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
