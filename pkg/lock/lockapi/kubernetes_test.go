package lockapi

import (
	"context"
	"os"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// cluster is the control plane of the tests of the API over the Kubernetes
// storage; the others run without one.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, testenv.WithCRDs("../crd/locks.stagehand.io.yaml")))
}

// newKubeStorage returns Kubernetes storage in a namespace of its own, the
// config it reaches the cluster with and the namespace.
func newKubeStorage(t *testing.T) (*lock.Kubernetes, *rest.Config, string) {
	t.Helper()
	env := cluster.Env(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side rate limit: 50 lockers race for real
	ns := env.Namespace(t)
	k, err := lock.NewKubernetesForConfig(cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	return k, cfg, ns
}

func TestConcurrentLockRESTKubernetes(t *testing.T) {
	k, _, _ := newKubeStorage(t)
	s, err := lock.New(k, lock.WithClock(newFakeClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	testConcurrentREST(context.Background(), t, newAPI(t, s))
}
