// Package testenv runs a real Kubernetes control plane for tests and the demo:
// etcd and kube-apiserver, and on request kube-controller-manager,
// kube-scheduler and kwok with a fake node, so that Deployments really roll
// out. Every process listens on loopback, logs to a file, and is stopped when
// the Env is stopped or the parent process dies.
//
// A test package declares one Shared control plane, started by the first test
// that asks for it, so that its tests of pure logic run without one; each test
// takes its own namespace:
//
//	var cluster testenv.Shared
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		env := cluster.Env(t)
//		ns := env.Namespace(t)
//		...
//	}
//
// The binaries come from $KUBEBUILDER_ASSETS or <repo>/bin/k8s; when neither
// holds them they are built (minutes), and the test that needed them is named.
package testenv
