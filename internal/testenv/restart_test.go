package testenv_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAuditLogAndRestart: the audit log records the writes to a workload,
// and kube-apiserver stopped and started again answers on the same address
// with what etcd kept.
func TestAuditLogAndRestart(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "audited", "registry.example.com/audited:1.0.0")
	patch := `{"metadata":{"annotations":{"stagehand.io/test":"x"}}}`
	if _, err := env.Clientset.AppsV1().Deployments(ns).Patch(ctx, "audited", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	evs, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, ev := range evs {
		if ev.ObjectRef.Namespace == ns && ev.ObjectRef.Name == "audited" && ev.ObjectRef.Subresource == "" {
			verbs = append(verbs, ev.Verb)
		}
	}
	if diff := cmp.Diff([]string{"create", "patch"}, verbs); diff != "" {
		t.Errorf("audit events of deployment audited (-want +got):\n%s", diff)
	}

	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.AppsV1().Deployments(ns).Get(ctx, "audited", metav1.GetOptions{}); err == nil {
		t.Fatal("the API server answered while stopped")
	}
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := env.Clientset.AppsV1().Deployments(ns).Get(ctx, "audited", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if d.Annotations["stagehand.io/test"] != "x" {
		t.Errorf("after the restart the deployment lost its annotation: %v", d.Annotations)
	}
	if err := env.StartAPIServer(ctx); err == nil {
		t.Error("StartAPIServer of a running API server succeeded, want an error")
	}
}
