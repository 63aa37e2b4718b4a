package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/crds"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestWaitKubeconfig: `reconciler wait --kubeconfig` watches the
// Environment objects a real daemon's envresource.Writer writes (hooked as
// `reconciler run` hooks it), as a ServiceAccount granted get, list and
// watch on environments only, in the namespace of its kubeconfig's context:
// exit 0 once devel deployed; 2 when prod, awaiting approval, times out; 1
// when prod's plan is rejected while the wait's watches end every second
// (--watch-timeout 1s: the rejection comes after two of them ended, so it
// is seen through a renewed watch); 1 when the revision is superseded; 1
// (refused) for a ServiceAccount without the grant; 2 for --service or
// --server beside --kubeconfig.
func TestWaitKubeconfig(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ax, err := apiextensions.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Apply(ctx, ax); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	var (
		d       atomic.Pointer[daemon.Daemon]
		stateNS string
	)
	writer := func(cfg *config.Config) daemon.Option {
		stateNS = cfg.State.Namespace
		w, err := envresource.New(dyn, stateNS, environmentSpecs(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return daemon.WithRecordHook(w.Hook(func(ctx context.Context, name string) (*status.Environment, status.Phase, error) {
			dd := d.Load()
			if dd == nil {
				return nil, "", errors.New("daemon not built yet")
			}
			v, err := dd.Environment(ctx, name)
			if err != nil {
				return nil, "", err
			}
			return v, v.Phase, nil
		}, func(name string, err error) { t.Logf("writing Environment %s: %v", name, err) }))
	}
	_, git, dm := clitest.WaitWorld(t, cluster.Env(t), writer)
	d.Store(dm)
	head := git.Head(t, "manifests", "main")

	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.RbacV1().Roles(stateNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "waiter"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"stagehand.io"}, Resources: []string{"environments"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(stateNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "waiter"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "waiter"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "waiter", Namespace: stateNS}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC authorizer learns of the binding through its
	// informers: a moment later, not at once (CI's run was refused 403).
	testenv.WaitFor(t, 30*time.Second, "the waiter's RoleBinding in force", func() bool {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + stateNS + ":waiter", Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: stateNS, Verb: "watch", Group: "stagehand.io", Resource: "environments"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	})
	kube := kubeconfigAs(t, env, stateNS, "waiter")
	run := func(args ...string) (string, string, int) {
		return runReconciler(t, append([]string{"wait", "--kubeconfig", kube, "--interval", "100ms"}, args...)...)
	}

	if out, errOut, code := run("--env", "devel", "--timeout", "60s"); code != 0 || !strings.Contains(out, "deployed") {
		t.Errorf("wait for devel: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run("--env", "devel", "--revision", head[:7], "--timeout", "10s"); code != 0 {
		t.Errorf("wait for devel at %s: exit %d\n%s%s", head[:7], code, out, errOut)
	}

	hash := pendingAt(t, dm, head)
	objectPendingAt(t, dyn, stateNS, head)
	if out, errOut, code := run("--env", "prod", "--timeout", "1s"); code != 2 || !strings.Contains(errOut, "timed out") || !strings.Contains(out, "AwaitingApproval") {
		t.Errorf("wait for prod awaiting approval: exit %d, want 2\n%s%s", code, out, errOut)
	}

	// Rejected once two of the wait's watches ended (by their timeout) and
	// a third is open.
	ended := watches(t, cs, "apiserver_request_total")
	go func() {
		testenv.WaitFor(t, 30*time.Second, "two watches of environments ended and one open", func() bool {
			return watches(t, cs, "apiserver_request_total") >= ended+2 && watches(t, cs, "apiserver_longrunning_requests") >= 1
		})
		if _, err := dm.Reject(context.Background(), "prod", hash, approval.Why{By: identity.Principal{ID: identity.Parse("token:ops")}, Reason: "not today"}); err != nil {
			t.Errorf("rejecting prod: %v", err)
		}
	}()
	if out, errOut, code := run("--env", "prod", "--revision", head, "--timeout", "60s", "--watch-timeout", "1s"); code != 1 || !strings.Contains(errOut, "rejected") {
		t.Errorf("wait for prod, rejected: exit %d, want 1 saying rejected\n%s%s", code, out, errOut)
	}

	// Superseded: a newer commit asks prod for another version, once the
	// wait watches the object showing the one waited for pending.
	second := git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "3.0.0"}]}]}`}, "prod 3.0.0")
	pendingAt(t, dm, second)
	objectPendingAt(t, dyn, stateNS, second)
	testenv.WaitFor(t, 30*time.Second, "the earlier waits' watches closed", func() bool {
		return watches(t, cs, "apiserver_longrunning_requests") == 0
	})
	go func() {
		testenv.WaitFor(t, 30*time.Second, "a watch of environments open", func() bool {
			return watches(t, cs, "apiserver_longrunning_requests") >= 1
		})
		git.Repo("manifests").Commit(t, "main", map[string]string{
			"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "4.0.0"}]}]}`}, "prod 4.0.0")
	}()
	if out, errOut, code := run("--env", "prod", "--revision", second, "--timeout", "60s"); code != 1 || !strings.Contains(errOut, "superseded") {
		t.Errorf("wait for prod at %s, superseded: exit %d, want 1 saying superseded\n%s%s", second[:7], code, out, errOut)
	}

	nobody := kubeconfigAs(t, env, stateNS, "nobody")
	if _, errOut, code := runReconciler(t, "wait", "--kubeconfig", nobody, "--env", "prod", "--timeout", "10s"); code != 1 || !strings.Contains(errOut, "refused (403)") {
		t.Errorf("wait as a ServiceAccount without get/list/watch on environments: exit %d, want 1 refused\n%s", code, errOut)
	}
	for _, args := range [][]string{
		{"--env", "prod", "--service", "web=2.0.0"},
		{"--env", "prod", "--server", "http://127.0.0.1:1"},
	} {
		if _, errOut, code := run(args...); code != 2 || !strings.Contains(errOut, "--kubeconfig") || !strings.Contains(errOut, args[2]) {
			t.Errorf("wait --kubeconfig %v: exit %d, want 2 naming both flags\n%s", args, code, errOut)
		}
	}
}

// kubeconfigAs writes a kubeconfig of env's API server whose context's
// namespace is ns, impersonating ServiceAccount sa of ns.
func kubeconfigAs(t *testing.T, env *testenv.Env, ns, sa string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kc.Contexts[kc.CurrentContext]
	c.Namespace = ns
	kc.AuthInfos[c.AuthInfo].Impersonate = "system:serviceaccount:" + ns + ":" + sa
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// objectPendingAt waits until prod's Environment in ns shows its plan at
// revision pending.
func objectPendingAt(t *testing.T, dyn dynamic.Interface, ns, revision string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "prod's Environment pending at "+revision[:12], func() bool {
		o, err := dyn.Resource(envresource.GVR).Namespace(ns).Get(context.Background(), "prod", metav1.GetOptions{})
		if err != nil {
			return false
		}
		rev, _, _ := unstructured.NestedString(o.Object, "status", "pending", "revision")
		return rev == revision
	})
}

// watches sums the API server's metric (apiserver_request_total: watches
// ended; apiserver_longrunning_requests: watches open) over the watches of
// environments.
func watches(t *testing.T, cs kubernetes.Interface, metric string) float64 {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Errorf("reading the API server's metrics: %v", err)
		return 0
	}
	var n float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, `resource="environments"`) || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			n += v
		}
	}
	return n
}
