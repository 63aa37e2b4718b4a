package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/crds"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

// TestRunAppliesCRDs: `reconciler run` installs the environments CRD an
// upgrade from a chart without it lacks, and with --apply-crds=false touches
// no CRD.
func TestRunAppliesCRDs(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ax, err := apiextensions.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	defs := ax.ApiextensionsV1().CustomResourceDefinitions()
	// The cluster as a chart without the environments CRD left it.
	if err := defs.Delete(ctx, "environments.stagehand.io", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := defs.Get(ctx, "environments.stagehand.io", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("environments.stagehand.io not deleted after a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	locks, err := defs.Get(ctx, "locks.stagehand.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"services": []}`,
	}, "devel")
	ns := env.Namespace(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	cfg := fmt.Sprintf("source: {url: %q, branch: main, cacheDir: %q}\nenvironments:\n  devel: {lockPath: apps/devel, targets: [{name: a, kubeconfig: %q, namespace: %s}]}\n"+
		"registry: {verifyDigests: false, pinDigests: false}\nlocks: {namespace: %s}\nstate: {namespace: %s, kubeconfig: %q}\n",
		url, filepath.Join(dir, "cache"), env.Kubeconfig, ns, ns, ns, env.Kubeconfig)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	if _, stderr, code := runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error", "--apply-crds=false"); code != 0 {
		t.Fatalf("run --once --apply-crds=false: exit %d\n%s", code, stderr)
	}
	if _, err := defs.Get(ctx, "environments.stagehand.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after run --apply-crds=false, environments.stagehand.io: %v, want not found", err)
	}
	if got, err := defs.Get(ctx, "locks.stagehand.io", metav1.GetOptions{}); err != nil || got.ResourceVersion != locks.ResourceVersion {
		t.Errorf("after run --apply-crds=false, locks.stagehand.io was written (resourceVersion %s → %v, %v)", locks.ResourceVersion, got.ResourceVersion, err)
	}

	if _, stderr, code := runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error"); code != 0 {
		t.Fatalf("run --once: exit %d\n%s", code, stderr)
	}
	got, err := defs.Get(ctx, "environments.stagehand.io", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after run --once, environments.stagehand.io: %v", err)
	}
	var managers []string
	for _, m := range got.ManagedFields {
		managers = append(managers, m.Manager)
	}
	if !strings.Contains(strings.Join(managers, ","), crds.FieldManager) || got.Annotations[crds.RevisionAnnotation] == "" {
		t.Errorf("environments.stagehand.io managed by %v with revision %q, want %s's apply", managers, got.Annotations[crds.RevisionAnnotation], crds.FieldManager)
	}
}
