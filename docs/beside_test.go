package docs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/chart"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// A chart as docs/how-to/beside-other-tools.md describes: the workload carries
// the service's label, and its image is the values' only until the workload
// exists; after that, the live one (Helm's lookup).
var besideChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: checkout-api\nversion: 0.1.0\n",
	"values.yaml": "image: {repository: registry.example.com/acme/checkout-api, tag: \"1.4.0\"}\nreplicas: 1\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout-api
  labels: {app.kubernetes.io/name: checkout-api}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app.kubernetes.io/name: checkout-api}}
  template:
    metadata: {labels: {app.kubernetes.io/name: checkout-api}}
    spec:
      containers:
        - name: checkout-api
          image: {{ include "checkout-api.image" . | quote }}
`,
	"templates/_image.tpl": `{{/* The image: the one running now once the workload exists (Stagehand owns it), else the values'. */}}
{{- define "checkout-api.image" -}}
{{- $live := lookup "apps/v1" "Deployment" .Release.Namespace "checkout-api" -}}
{{- if $live -}}
{{- (index $live.spec.template.spec.containers 0).image -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}
{{- end -}}
`,
}

// TestHelmBeside shows the Helm recipe of docs/how-to/beside-other-tools.md
// working on the real API server: Helm installs the workload, Stagehand's
// reconciler applies a newer image, and helm upgrades (of another value, and
// of the chart's image value) keep Stagehand's image, because the chart
// renders the live image once the workload exists. Without that (a plain
// image: {{ .Values.image.tag }}) Helm 3's three-way merge puts the chart's
// image back on every upgrade: this test failed so.
func TestHelmBeside(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	h, err := chart.Find(t.Context())
	if err != nil {
		t.Skipf("no helm (make helm): %v", err)
	}
	dir := t.TempDir()
	for name, text := range besideChart {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := h.Install(t.Context(), env.Kubeconfig, dir, "checkout", ns); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	helmUpgrade := func(set string) {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), h.Path(), "upgrade", "checkout", dir, "--kubeconfig", env.Kubeconfig,
			"--namespace", ns, "--reuse-values", "--set", set).CombinedOutput()
		if err != nil {
			t.Fatalf("helm upgrade --set %s: %v\n%s", set, err, out)
		}
	}
	image := func() string {
		t.Helper()
		d, err := env.Clientset.AppsV1().Deployments(ns).Get(t.Context(), "checkout-api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}

	// Stagehand deploys 1.5.0, as reconciler run does: plan, then apply that plan.
	rec, err := reconcile.New(reconcile.WithVerifyDigests(false), reconcile.WithPinDigests(false),
		reconcile.WithRolloutTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{
		Environment: &manifest.Environment{Name: "prod", Services: []manifest.Service{{Name: "checkout-api",
			Containers: []manifest.Container{{DockerName: "registry.example.com/acme/checkout-api", DockerTag: "1.5.0"}}}}},
		Revision: "3f1c2ab",
		Targets:  []reconcile.Target{{Name: "a", Namespace: ns, Client: env.Clientset}},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	plan, err := rec.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) != 1 {
		t.Fatalf("plan: %+v, want one change of checkout-api's image", plan)
	}
	if _, err := rec.Apply(ctx, req, plan.PlanHash); err != nil {
		t.Fatal(err)
	}
	const stagehands = "registry.example.com/acme/checkout-api:1.5.0"
	if got := image(); got != stagehands {
		t.Fatalf("after Stagehand's apply the image is %s, want %s", got, stagehands)
	}

	helmUpgrade("replicas=2")
	if got := image(); got != stagehands {
		t.Errorf("a helm upgrade of another value put the image back to %s; the recipe says it keeps Stagehand's %s", got, stagehands)
	}
	d, err := env.Clientset.AppsV1().Deployments(ns).Get(t.Context(), "checkout-api", metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("the helm upgrade did not apply replicas=2: %v", err)
	}
	helmUpgrade("image.tag=1.4.1")
	if got := image(); got != stagehands {
		t.Errorf("a helm upgrade of the chart's image value changed the image to %s; the recipe leaves it to Stagehand (%s)", got, stagehands)
	}
}
