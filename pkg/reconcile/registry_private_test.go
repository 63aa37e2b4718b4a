package reconcile_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/registry"
)

// pullSecret creates a kubernetes.io/dockerconfigjson Secret holding
// user:password for host, as `kubectl create secret docker-registry` does.
func pullSecret(t *testing.T, ns, name, host, user, password string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, host, user, password, auth)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)},
	}
	if _, err := cluster.Env(t).Clientset.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating secret %s: %v", name, err)
	}
}

func serviceAccount(t *testing.T, ns, name string, pullSecrets ...string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for _, s := range pullSecrets {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if _, err := cluster.Env(t).Clientset.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating serviceaccount %s: %v", name, err)
	}
}

// noDockerConfig points the default keychain at an empty docker config, so
// only the cluster's credentials can reach the registry.
func noDockerConfig(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("REGISTRY_AUTH_FILE", "")
}

// TestDeployPrivateRegistryPinnedByDigest: the registry's credentials exist
// only in an imagePullSecret that the workload's ServiceAccount references.
// The plan pins the tag to the registry's digest with them, and Apply
// deploys repo:tag@digest. A workload whose ServiceAccount has no pull
// secret is a problem naming the registry and its 401; the pod spec's own
// imagePullSecrets count too.
func TestDeployPrivateRegistryPinnedByDigest(t *testing.T) {
	noDockerConfig(t)
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	host := reg.Host()
	d := reg.Push(t, "team/api", "2")

	ns := env.Namespace(t)
	pullSecret(t, ns, "regcred", host, "puller", "s3cret")
	serviceAccount(t, ns, "api", "regcred")
	serviceAccount(t, ns, "plain")
	withSA := func(sa string, secrets ...string) func(*appsv1.Deployment) {
		return func(dep *appsv1.Deployment) {
			dep.Spec.Template.Spec.ServiceAccountName = sa
			for _, s := range secrets {
				dep.Spec.Template.Spec.ImagePullSecrets = append(dep.Spec.Template.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
			}
		}
	}
	image := host + "/team/api:1"
	createDeployment(t, env.Clientset, ns, "api", "api", 1, pod{containers: [][2]string{{"api", image}}}, withSA("api"))
	createDeployment(t, env.Clientset, ns, "worker", "worker", 1, pod{containers: [][2]string{{"worker", image}}}, withSA("plain", "regcred"))
	createDeployment(t, env.Clientset, ns, "cron", "cron", 1, pod{containers: [][2]string{{"cron", image}}}, withSA("plain"))

	e := environment(
		svc("api", [3]string{"team/api", "2", ""}),
		svc("worker", [3]string{"team/api", "2", d}),
		svc("cron", [3]string{"team/api", "2", ""}),
	)
	req := reconcile.Request{Environment: e, Revision: "r1", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithVerifyDigests(true),
		reconcile.WithWorkloadKeychains(registry.ClusterKeychains()), reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)

	pinned := host + "/team/api:2@" + d
	var got []string
	for _, c := range plan.Changes {
		got = append(got, c.Service+" -> "+c.To)
	}
	if diff := cmp.Diff([]string{"api -> " + pinned, "worker -> " + pinned}, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if len(plan.Problems) != 1 || plan.Problems[0].Service != "cron" {
		t.Fatalf("problems %v, want one for cron", plan.Problems)
	}
	msg := plan.Problems[0].Message
	for _, want := range []string{"cannot pin a digest for " + host + "/team/api:2", "registry " + host + " answered 401 Unauthorized to a request made anonymously"} {
		if !strings.Contains(msg, want) {
			t.Errorf("problem %q does not say %q", msg, want)
		}
	}

	// The deploy: a plan with a problem is applied for the services without
	// one, so cron stays and api runs the pinned image.
	if _, err := r.Apply(context.Background(), req, plan.PlanHash); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for name, want := range map[string]string{"api": pinned, "worker": pinned, "cron": image} {
		if _, containers := deploymentImages(t, ns, name); containers[0] != want {
			t.Errorf("%s runs %s, want %s", name, containers[0], want)
		}
	}
}

// TestClusterKeychainsForbidden: a reconciler not allowed to read the
// ServiceAccount reports that, per workload, instead of guessing.
func TestClusterKeychainsForbidden(t *testing.T) {
	noDockerConfig(t)
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	reg.Push(t, "team/api", "2")
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "api", "api", 0, pod{containers: [][2]string{{"api", reg.Host() + "/team/api:1"}}})
	tg := reconcile.Target{Name: "a", Namespace: ns, Client: impersonate(t, "system:serviceaccount:"+ns+":nobody")}
	req := reconcile.Request{Environment: environment(svc("api", [3]string{"team/api", "2", ""})), Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithWorkloadKeychains(func(ctx context.Context, pc registry.PullContext) (authn.Keychain, error) {
		pc.Client = tg.Client // reads through a client without rights on ServiceAccounts
		return registry.ClusterKeychains()(ctx, pc)
	}))
	got := onlyOutcome(t, mustPlan(t, r, req))
	want := "cannot pin a digest for " + reg.Host() + "/team/api:2: resolving " + reg.Host() + "/team/api:2: reading image pull secrets of serviceaccount " + ns + "/default in target a: "
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "forbidden") {
		t.Errorf("got %q, want %q… forbidden", got, want)
	}
}

// impersonate returns a client of the test API server acting as user, who
// has no rights unless a test grants them.
func impersonate(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	rc := rest.CopyConfig(cluster.Env(t).Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
