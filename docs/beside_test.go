package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	if out, err := h.Install(t.Context(), env.Kubeconfig, chart.Release{Dir: dir, Name: "checkout", Namespace: ns}); err != nil {
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

// fluxManager is the field manager of Flux's kustomize-controller, which applies server-side and forces
// ownership of every field its manifests hold.
const fluxManager = "kustomize-controller"

// TestFieldManagersBeside shows, on the real API server, the field-manager behaviour the Argo CD and Flux
// recipes of docs/how-to/beside-other-tools.md rely on. Another tool creates the workload by server-side
// apply; Stagehand's reconciler then deploys a new image, and the managed fields name `stagehand` as the
// image's manager (what Argo CD's managedFieldsManagers: [stagehand] ignores). The other manager applying
// the workload without the image field (a replicas change) leaves Stagehand's image; applying it with the
// image and without force is refused as a conflict with `stagehand`; with force (as Flux applies) it takes
// the image back, which is what the Flux recipe warns about.
func TestFieldManagersBeside(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	deployments := env.Clientset.AppsV1().Deployments(ns)
	const theirs, stagehands = "registry.example.com/acme/checkout-api:1.4.0", "registry.example.com/acme/checkout-api:1.5.0"
	workload := func(replicas int, image string) []byte {
		container := `{"name": "checkout-api"}`
		if image != "" {
			container = fmt.Sprintf(`{"name": "checkout-api", "image": %q}`, image)
		}
		return []byte(fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "checkout-api", "labels": {"app.kubernetes.io/name": "checkout-api"}},
  "spec": {"replicas": %d, "selector": {"matchLabels": {"app.kubernetes.io/name": "checkout-api"}},
    "template": {"metadata": {"labels": {"app.kubernetes.io/name": "checkout-api"}},
      "spec": {"containers": [%s]}}}}`, replicas, container))
	}
	apply := func(body []byte, force bool) (*appsv1.Deployment, error) {
		return deployments.Patch(ctx, "checkout-api", types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: fluxManager, Force: &force})
	}
	if _, err := apply(workload(1, theirs), true); err != nil {
		t.Fatalf("the other tool's first apply: %v", err)
	}

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
	plan, err := rec.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Apply(ctx, req, plan.PlanHash); err != nil {
		t.Fatal(err)
	}
	d, err := deployments.Get(ctx, "checkout-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != stagehands {
		t.Fatalf("after Stagehand's apply the image is %s, want %s", got, stagehands)
	}
	if diff := cmp.Diff([]string{reconcile.FieldManager}, imageManagers(t, d)); diff != "" {
		t.Errorf("the image's managers after Stagehand's apply (-want +got), which Argo CD's managedFieldsManagers: [stagehand] reads:\n%s", diff)
	}

	// Without the image field: the other manager's change applies, Stagehand's image stays.
	d, err = apply(workload(2, ""), true)
	if err != nil {
		t.Fatalf("applying without the image: %v", err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != stagehands || *d.Spec.Replicas != 2 {
		t.Errorf("applying without the image field: image %s, replicas %d; want %s (Stagehand's) and 2", got, *d.Spec.Replicas, stagehands)
	}

	// With the image, without force: a conflict naming stagehand, nothing changed.
	_, err = apply(workload(2, theirs), false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), reconcile.FieldManager) {
		t.Errorf("applying the image without force: %v, want a conflict with the manager %q", err, reconcile.FieldManager)
	}

	// With the image and force, as Flux applies: the image is the repository's again.
	d, err = apply(workload(2, theirs), true)
	if err != nil {
		t.Fatalf("applying the image with force: %v", err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != theirs {
		t.Errorf("a forced apply with the image left %s, want %s: the Flux recipe's warning would be wrong", got, theirs)
	}
	if diff := cmp.Diff([]string{fluxManager}, imageManagers(t, d)); diff != "" {
		t.Errorf("the image's managers after the forced apply (-want +got):\n%s", diff)
	}
}

// imageManagers returns the managers whose managed fields hold the checkout-api container's image.
func imageManagers(t *testing.T, d *appsv1.Deployment) []string {
	t.Helper()
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		c, _ := dig(fields, "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"checkout-api"}`).(map[string]any)
		if _, ok := c["f:image"]; ok {
			out = append(out, mf.Manager)
		}
	}
	sort.Strings(out)
	return out
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
