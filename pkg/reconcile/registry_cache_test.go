package reconcile_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/registry"
)

// clock is a settable time for the digest cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestDigestCache counts the registry's manifest requests: a second plan
// within the TTL asks nothing; a tag moved in the registry is pinned to its
// new digest once the TTL has passed, and a dockerDigest that disagrees with
// the cache is checked with the registry at once; other credentials do not
// share the cached answer.
func TestDigestCache(t *testing.T) {
	noDockerConfig(t)
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	host := reg.Host()
	first := reg.Push(t, "team/app", "2")
	ns := env.Namespace(t)
	pullSecret(t, ns, "regcred", host, "puller", "s3cret")
	pullSecret(t, ns, "othercred", host, "puller", "s3cret")
	serviceAccount(t, ns, "default-sa", "regcred")
	createDeployment(t, env.Clientset, ns, "app", "app", 0, pod{containers: [][2]string{{"app", host + "/team/app:1"}}}, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.ServiceAccountName = "default-sa"
	})
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithVerifyDigests(true),
		reconcile.WithWorkloadKeychains(registry.ClusterKeychains()), reconcile.WithDigestCacheTTL(5*time.Minute))
	reconcile.SetRegistryClock(r, clk.Now)
	reads, client := pathCountingClient(t, "/serviceaccounts/", "/secrets/")
	tg := reconcile.Target{Name: "a", Namespace: ns, Client: client}
	plan := func(digest string) (string, int64) {
		t.Helper()
		before := reg.ManifestRequests()
		req := reconcile.Request{Environment: environment(svc("app", [3]string{"team/app", "2", digest})), Revision: "r", Targets: []reconcile.Target{tg}}
		return onlyOutcome(t, mustPlan(t, r, req)), reg.ManifestRequests() - before
	}
	pin := func(d string) string { return host + "/team/app:2@" + d }

	var second string
	steps := []struct {
		name     string
		do       func() string // changes the world; returns the manifest's dockerDigest ("": pin)
		want     func() string
		requests int64 // to the registry's manifests
		reads    int64 // of the ServiceAccount and its pull Secret
	}{
		{"first plan asks the registry", func() string { return "" }, func() string { return pin(first) }, 1, 2},
		{"second plan within the TTL asks nothing", func() string { clk.Add(4 * time.Minute); return "" }, func() string { return pin(first) }, 0, 0},
		{"a moved tag is pinned from the cache until the TTL ends", func() string { second = reg.Push(t, "team/app", "2"); return "" }, func() string { return pin(first) }, 0, 0},
		{"a dockerDigest disagreeing with the cache is checked at once", func() string { return second }, func() string { return pin(second) }, 1, 0},
		{"after the TTL the new digest is pinned", func() string { clk.Add(6 * time.Minute); return "" }, func() string { return pin(second) }, 1, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			digest := st.do()
			before := reads.Load()
			got, n := plan(digest)
			if read := reads.Load() - before; got != st.want() || n != st.requests || read != st.reads {
				t.Errorf("got %q after %d manifest requests and %d reads of pull credentials, want %q after %d and %d",
					got, n, read, st.want(), st.requests, st.reads)
			}
		})
	}

	t.Run("other credentials do not share the entry", func(t *testing.T) {
		other := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithDigestCacheTTL(time.Hour),
			reconcile.WithWorkloadKeychains(registry.ClusterKeychains()))
		reqNS := env.Namespace(t)
		pullSecret(t, reqNS, "a", host, "puller", "s3cret")
		pullSecret(t, reqNS, "b", host, "puller", "wrong")
		withSecret := func(s string) func(*appsv1.Deployment) {
			return func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s}}
			}
		}
		createDeployment(t, env.Clientset, reqNS, "good", "good", 0, pod{containers: [][2]string{{"app", host + "/team/app:1"}}}, withSecret("a"))
		createDeployment(t, env.Clientset, reqNS, "bad", "bad", 0, pod{containers: [][2]string{{"app", host + "/team/app:1"}}}, withSecret("b"))
		req := reconcile.Request{Environment: environment(svc("good", [3]string{"team/app", "2", ""})), Revision: "r", Targets: []reconcile.Target{target(t, "a", reqNS)}}
		if got := onlyOutcome(t, mustPlan(t, other, req)); got != pin(second) {
			t.Fatalf("good: %q", got)
		}
		req.Environment = environment(svc("bad", [3]string{"team/app", "2", ""}))
		if got := onlyOutcome(t, mustPlan(t, other, req)); got == pin(second) {
			t.Errorf("bad credentials got the digest cached for good ones: %q", got)
		}
	})
}

// TestRegistryRateLimit resolves 30 distinct images at 20 requests a second
// (bursts of 20) with 16 resolutions in flight: at the registry, no span of
// time holds more requests than the token bucket allows.
func TestRegistryRateLimit(t *testing.T) {
	noDockerConfig(t)
	env := cluster.Env(t)
	reg := registrytest.New(t)
	host := reg.Host()
	ns := env.Namespace(t)
	var services []manifest.Service
	for i := range 30 {
		name := fmt.Sprintf("s%02d", i)
		reg.Push(t, "team/"+name, "2")
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", host + "/team/" + name + ":1"}}})
		services = append(services, svc(name, [3]string{"team/" + name, "2", ""}))
	}
	const perSecond, burst = 20.0, 20
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithRegistryRateLimit(perSecond), reconcile.WithConcurrency(16))
	before := len(reg.RequestTimes())
	p := mustPlan(t, r, reconcile.Request{Environment: environment(services...), Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}})
	if len(p.Changes) != 30 || len(p.Problems) != 0 {
		t.Fatalf("%d changes, problems %v; want 30 changes", len(p.Changes), p.Problems)
	}
	times := reg.RequestTimes()[before:]
	if len(times) < 30 {
		t.Fatalf("registry saw %d requests, want at least 30", len(times))
	}
	// Requests i..j (inclusive) need j-i+1 tokens: at most burst plus what
	// the bucket refills between them (one more for clock granularity).
	for i := range times {
		for j := i; j < len(times); j++ {
			allowed := float64(burst) + perSecond*times[j].Sub(times[i]).Seconds() + 1
			if n := float64(j - i + 1); n > allowed {
				t.Fatalf("requests %d..%d: %v within %s, more than the %v the limit allows", i, j, n, times[j].Sub(times[i]), allowed)
			}
		}
	}
	t.Logf("%d requests over %s", len(times), times[len(times)-1].Sub(times[0]))
}

// pathCountingClient is a client of the package's API server that counts the
// requests whose path contains any of parts.
func pathCountingClient(t *testing.T, parts ...string) (*atomic.Int64, kubernetes.Interface) {
	t.Helper()
	var n atomic.Int64
	rc := rest.CopyConfig(cluster.Env(t).Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			for _, p := range parts {
				if strings.Contains(req.URL.Path, p) {
					n.Add(1)
					break
				}
			}
			return rt.RoundTrip(req)
		})
	})
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &n, c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPullSecretsReadAgainAfterRefusal: the pull secrets read for a workload
// are reused within the TTL, but a registry's 401 drops them, so a corrected
// Secret is used by the very next plan.
func TestPullSecretsReadAgainAfterRefusal(t *testing.T) {
	noDockerConfig(t)
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	d := reg.Push(t, "team/app", "2")
	ns := env.Namespace(t)
	pullSecret(t, ns, "regcred", reg.Host(), "puller", "wrong")
	serviceAccount(t, ns, "default", "regcred")
	createDeployment(t, env.Clientset, ns, "app", "app", 0, pod{containers: [][2]string{{"app", reg.Host() + "/team/app:1"}}})
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithWorkloadKeychains(registry.ClusterKeychains()), reconcile.WithDigestCacheTTL(time.Hour))
	req := reconcile.Request{Environment: environment(svc("app", [3]string{"team/app", "2", ""})), Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	if got := onlyOutcome(t, mustPlan(t, r, req)); !strings.Contains(got, "answered 401 Unauthorized to a request made as user \"puller\"") {
		t.Fatalf("with the wrong password: %q", got)
	}
	s, err := env.Clientset.CoreV1().Secrets(ns).Get(t.Context(), "regcred", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	s.StringData = map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"` + reg.Host() + `":{"username":"puller","password":"s3cret"}}}`}
	if _, err := env.Clientset.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := onlyOutcome(t, mustPlan(t, r, req)), reg.Host()+"/team/app:2@"+d; got != want {
		t.Errorf("after fixing the Secret: %q, want %q", got, want)
	}
}

// helperKeychain is a credential helper (ECR's, ACR's, Google's): every
// call mints a new token for the registry.
type helperKeychain struct {
	reg   *registrytest.Registry
	calls atomic.Int64
}

func (k *helperKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return mintingAuth{k}, nil
}

type mintingAuth struct{ k *helperKeychain }

func (a mintingAuth) Authorization() (*authn.AuthConfig, error) {
	a.k.calls.Add(1)
	return &authn.AuthConfig{Username: "AWS", Password: a.k.reg.Mint()}, nil
}

// TestDigestCacheWithMintedTokens: with a credential helper that mints a
// new token on every call, a second plan within the TTL still asks the
// registry nothing and runs the helper no more; after the TTL both happen
// once again.
func TestDigestCacheWithMintedTokens(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithMintedTokens("AWS"))
	host := reg.Host()
	reg.Push(t, "team/app", "2")
	reg.Push(t, "team/web", "2")
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "app", "app", 0, pod{containers: [][2]string{{"app", host + "/team/app:1"}}})
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", host + "/team/web:1"}}})
	kc := &helperKeychain{reg: reg}
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithVerifyDigests(true),
		reconcile.WithKeychain(kc), reconcile.WithDigestCacheTTL(5*time.Minute))
	reconcile.SetRegistryClock(r, clk.Now)
	req := reconcile.Request{Environment: environment(svc("app", [3]string{"team/app", "2", ""}), svc("web", [3]string{"team/web", "2", ""})),
		Revision: "r", Targets: []reconcile.Target{{Name: "a", Namespace: ns, Client: env.Clientset}}}
	steps := []struct {
		name        string
		advance     time.Duration
		requests    int64 // to the registry's manifests
		helperCalls int64
	}{
		{"first plan runs the helper once per repository and asks the registry", 0, 2, 2},
		{"second plan within the TTL asks nothing", 4 * time.Minute, 0, 0},
		{"after the TTL both again", 2 * time.Minute, 2, 2},
	}
	for _, st := range steps {
		clk.Add(st.advance)
		before, calls := reg.ManifestRequests(), kc.calls.Load()
		p := mustPlan(t, r, req)
		if len(p.Problems) != 0 || len(p.Changes) != 2 {
			t.Fatalf("%s: problems %+v, %d changes", st.name, p.Problems, len(p.Changes))
		}
		if got := reg.ManifestRequests() - before; got != st.requests {
			t.Errorf("%s: %d manifest requests, want %d", st.name, got, st.requests)
		}
		if got := kc.calls.Load() - calls; got != st.helperCalls {
			t.Errorf("%s: helper ran %d times, want %d", st.name, got, st.helperCalls)
		}
	}
}
