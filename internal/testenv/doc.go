// Package testenv runs a real Kubernetes control plane for tests and the demo:
// etcd and kube-apiserver, and on request kube-controller-manager,
// kube-scheduler and kwok with a fake node, so that Deployments really roll
// out. Every process listens on loopback, logs to a file, and is stopped when
// the Env is stopped or the parent process dies.
//
// A test package starts one control plane in TestMain and gives each test its
// own namespace:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
//
//	func TestSomething(t *testing.T) {
//		ns := env.Namespace(t)
//		...
//	}
package testenv
