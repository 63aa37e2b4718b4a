package reconcile_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

const label = "app.kubernetes.io/name"

// pod is a pod template: containers as name=image pairs, init containers likewise.
type pod struct {
	containers, inits [][2]string
	nodeSelector      map[string]string
}

func (p pod) template(match string) corev1.PodTemplateSpec {
	spec := corev1.PodSpec{NodeSelector: p.nodeSelector, TerminationGracePeriodSeconds: new(int64)}
	for _, c := range p.inits {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: c[0], Image: c[1]})
	}
	for _, c := range p.containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c[0], Image: c[1]})
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"match": match}}, Spec: spec}
}

func meta(ns, name, service string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: ns}
	if service != "" {
		m.Labels = map[string]string{label: service}
	}
	return m
}

func selector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"match": name}}
}

func createDeployment(t testing.TB, c kubernetes.Interface, ns, name, service string, replicas int32, p pod, mut ...func(*appsv1.Deployment)) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: meta(ns, name, service), Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: selector(name), Template: p.template(name),
	}}
	for _, m := range mut {
		m(d)
	}
	if _, err := c.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
}

func createStatefulSet(t testing.TB, c kubernetes.Interface, ns, name, service string, replicas int32, p pod) {
	t.Helper()
	s := &appsv1.StatefulSet{ObjectMeta: meta(ns, name, service), Spec: appsv1.StatefulSetSpec{
		Replicas: &replicas, Selector: selector(name), Template: p.template(name), ServiceName: name,
	}}
	if _, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating statefulset %s: %v", name, err)
	}
}

func createDaemonSet(t testing.TB, c kubernetes.Interface, ns, name, service string, p pod) {
	t.Helper()
	d := &appsv1.DaemonSet{ObjectMeta: meta(ns, name, service), Spec: appsv1.DaemonSetSpec{
		Selector: selector(name), Template: p.template(name),
	}}
	if _, err := c.AppsV1().DaemonSets(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating daemonset %s: %v", name, err)
	}
}

func createCronJob(t testing.TB, c kubernetes.Interface, ns, name, service string, p pod) {
	t.Helper()
	tmpl := p.template(name)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	cj := &batchv1.CronJob{ObjectMeta: meta(ns, name, service), Spec: batchv1.CronJobSpec{
		Schedule:    "0 3 * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}},
	}}
	if _, err := c.BatchV1().CronJobs(ns).Create(context.Background(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating cronjob %s: %v", name, err)
	}
}

// svc is a manifest service with containers given as dockerName, tag, digest triples.
func svc(name string, containers ...[3]string) manifest.Service {
	s := manifest.Service{Name: name, Source: "environments/test/manifest.json"}
	for _, c := range containers {
		s.Containers = append(s.Containers, manifest.Container{DockerName: c[0], DockerTag: c[1], DockerDigest: c[2]})
	}
	return s
}

func environment(services ...manifest.Service) *manifest.Environment {
	return &manifest.Environment{Name: "test", Root: "environments/test/manifest.json", Services: services}
}

func target(t testing.TB, name, ns string) reconcile.Target {
	t.Helper()
	return reconcile.Target{Name: name, Namespace: ns, Client: cluster.Env(t).Clientset}
}

func newReconciler(t testing.TB, opts ...reconcile.Option) *reconcile.Reconciler {
	t.Helper()
	opts = append([]reconcile.Option{reconcile.WithPollInterval(200 * time.Millisecond)}, opts...)
	r, err := reconcile.New(opts...)
	if err != nil {
		t.Fatalf("reconcile.New: %v", err)
	}
	return r
}

func mustPlan(t testing.TB, r *reconcile.Reconciler, req reconcile.Request) *reconcile.Plan {
	t.Helper()
	p, err := r.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return p
}

func deploymentImages(t testing.TB, ns, name string) (inits, containers []string) {
	t.Helper()
	env := cluster.Env(t)
	d, err := env.Clientset.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting deployment %s: %v", name, err)
	}
	for _, c := range d.Spec.Template.Spec.InitContainers {
		inits = append(inits, c.Image)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		containers = append(containers, c.Image)
	}
	return inits, containers
}
