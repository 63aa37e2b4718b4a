package testenv_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, testenv.WithRollouts(), testenv.WithAuditLog())) }

func TestDeploymentRollsOut(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	replicas := int32(2)
	d := testenv.Deployment("web", "registry.example.com/web:1.0.0")
	d.Spec.Replicas = &replicas
	deps := env.Clientset.AppsV1().Deployments(ns)
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, env, ns, "web", 2)

	// An image change rolls out again, through a new ReplicaSet.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example.com/web:1.1.0"}]}}}}`
	if _, err := deps.Patch(ctx, "web", "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, env, ns, "web", 2)
	pods, err := env.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == "registry.example.com/web:1.1.0" && p.Spec.NodeName == testenv.FakeNodeName {
			ready++
		}
	}
	if ready != 2 {
		t.Fatalf("want 2 pods of the new image on the fake node, got %d", ready)
	}
}

// waitRolledOut waits for the rollout for up to two minutes: the
// controller-manager, scheduler and kwok share two cores with the other
// packages' control planes under `make test`.
func waitRolledOut(t *testing.T, env *testenv.Env, ns, name string, replicas int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := env.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas &&
			s.AvailableReplicas == replicas && s.Replicas == replicas, nil
	})
	if err != nil {
		t.Fatalf("deployment %s/%s did not roll out: %v\n%s", ns, name, err, env.DescribeRollout(context.Background(), ns, name))
	}
}

func TestKubeconfigWorks(t *testing.T) {
	env := cluster.Env(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.GitVersion, "v1.36") {
		t.Errorf("server version = %s, want v1.36.x", v.GitVersion)
	}
}

// TestStopLeavesNothing starts a second, plain control plane and checks that
// Stop ends every one of its processes and removes its directory.
func TestStopLeavesNothing(t *testing.T) {
	e, err := testenv.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pids := e.PIDs()
	if len(pids) != 2 {
		t.Fatalf("want etcd and kube-apiserver running, got %d processes", len(pids))
	}
	dir := e.Dir
	e.Stop()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still alive after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop", dir)
	}
}
