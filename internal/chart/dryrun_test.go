package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/crds"
	"github.com/stagehand-gitops/stagehand/pkg/lock/crd"
)

// TestServerSideDryRun applies everything the chart renders with server-side
// dry-run to the real API server: schemas, defaults and admission all accept
// it. Namespaces are created for real first.
func TestServerSideDryRun(t *testing.T) {
	env := cluster.Env(t)
	tests := []struct {
		name   string
		values func(t *testing.T, devel, prod, extra string) []string
	}{
		{name: "default values", values: func(t *testing.T, devel, prod, extra string) []string {
			return []string{valuesFile(t, map[string]any{
				"config": map[string]any{"environments": map[string]any{"devel": map[string]any{
					"targets": []any{map[string]any{"name": "a", "namespace": devel}},
				}}},
			})}
		}},
		{name: "full values", values: func(t *testing.T, devel, prod, extra string) []string {
			return []string{fullValues(t), scopedValues(t, devel, prod, extra)}
		}},
		{name: "full values, cluster-wide RBAC", values: func(t *testing.T, devel, prod, extra string) []string {
			return []string{fullValues(t), scopedValues(t, devel, prod, extra),
				valuesFile(t, map[string]any{"rbac": map[string]any{"clusterWide": true}})}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rel, devel, prod, extra := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
			objs := render(t, rel, tc.values(t, devel, prod, extra)...)
			a := newApplier(t, env.Config)
			for _, o := range objs {
				got, err := a.apply(t.Context(), o, true)
				if err != nil {
					t.Error(err)
					continue
				}
				if got.GetName() != o.GetName() {
					t.Errorf("dry-run of %s %s returned %s", o.GetKind(), o.GetName(), got.GetName())
				}
			}
			// A dry run stores nothing.
			if d, err := env.Clientset.AppsV1().Deployments(rel).List(t.Context(), metav1.ListOptions{}); err != nil || len(d.Items) != 0 {
				t.Errorf("after a dry run, Deployments in %s: %v, %v", rel, d, err)
			}
		})
	}
}

// TestCRDsMatchPkgLock: the chart ships the very CRDs the reconciler applies
// at start (internal/crds): pkg/lock's, which it stores Locks in, and the
// Environment's, and no other.
func TestCRDsMatchPkgLock(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir(t), "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped, chart []string
	for _, d := range crds.Definitions() {
		shipped = append(shipped, d.File)
		got, err := os.ReadFile(filepath.Join(chartDir(t), "crds", d.File))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(d.YAML), string(got)); diff != "" {
			t.Errorf("charts/stagehand/crds/%s differs from the reconciler's (-internal/crds +chart); copy it over:\n%s", d.File, diff)
		}
	}
	for _, f := range files {
		chart = append(chart, filepath.Base(f))
	}
	if diff := cmp.Diff(sorted(shipped), sorted(chart)); diff != "" {
		t.Errorf("files of charts/stagehand/crds against the reconciler's CRDs (-internal/crds +chart):\n%s", diff)
	}
	if crds.Definitions()[0].File != crd.File {
		t.Errorf("first CRD applied is %s, want pkg/lock's %s", crds.Definitions()[0].File, crd.File)
	}
}

// TestHelmInstall is what a user does: helm install into the cluster (the
// CRD is already there, as after a first install), then helm uninstall,
// which leaves no workload rights behind.
func TestHelmInstall(t *testing.T) {
	env := cluster.Env(t)
	rel, devel, prod, extra := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
	h := helm(t)
	out, err := h.Install(t.Context(), env.Kubeconfig, Release{Dir: chartDir(t), Name: "sh", Namespace: rel}, fullValues(t), scopedValues(t, devel, prod, extra))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STATUS: deployed", "Workload rights (get/list/watch/patch, Events) granted in:",
		"  - " + devel + "\n", "  - " + prod + "\n", "  - " + extra + "\n",
		"Image pull Secrets readable there, by name: regcred, registry-credentials\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm install output lacks %q:\n%s", want, out)
		}
	}
	for _, ns := range []string{devel, prod, extra} {
		if _, err := env.Clientset.RbacV1().RoleBindings(ns).Get(t.Context(), "sh-stagehand-workloads", metav1.GetOptions{}); err != nil {
			t.Errorf("after install, RoleBinding in %s: %v", ns, err)
		}
	}
	if out, err := h.Uninstall(t.Context(), env.Kubeconfig, "sh", rel); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, ns := range []string{devel, prod, extra} {
		_, err := env.Clientset.RbacV1().RoleBindings(ns).Get(t.Context(), "sh-stagehand-workloads", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("after uninstall, RoleBinding in %s: %v, want NotFound", ns, err)
		}
	}
}
