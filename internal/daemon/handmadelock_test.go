package daemon

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestHandMadeLockBlocksDeploy: a Lock object applied by hand (kubectl, a GitOps repository), under a name
// of its own and without Stagehand's labels, blocks a skipConfirmation environment's deploy like any other
// lock, and the lock service's Get (the cheap read of an absent lock) finds it.
func TestHandMadeLockBlocksDeploy(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	h := newHarness(t, "devel")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stagehand.io/v1alpha1", "kind": "Lock",
		"metadata": map[string]any{"name": "holiday-freeze"},
		"spec": map[string]any{"path": "apps/devel", "type": "freeze", "author": "release-manager",
			"createdAt": now.Format(time.RFC3339), "updatedAt": now.Format(time.RFC3339),
			"expiresAt": now.Add(time.Hour).Format(time.RFC3339)},
	}}
	if _, err := dyn.Resource(lock.Resource).Namespace(h.stateNS).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := h.start()
	testenv.WaitFor(t, 30*time.Second, "devel's change blocked by the hand-made freeze", func() bool {
		v := r.environment(t, "devel")
		return len(v.Services) == 1 && v.Services[0].Targets[0].State == status.StateBlocked
	})
	if got := env.Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("devel runs %s under a hand-made freeze", got)
	}
	if l, err := r.d.lockSvc.Get(ctx, "apps/devel"); err != nil || l.Author != "release-manager" || l.Type != lock.Freeze {
		t.Errorf("Get(apps/devel) = %+v, %v; want the hand-made freeze", l, err)
	}
}
