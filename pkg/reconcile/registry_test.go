package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestPlanDigests verifies given digests against a real registry (match,
// mismatch, unknown tag) and pins digests of tags given without one.
func TestPlanDigests(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t)
	host := reg.Host()
	matchDigest := reg.Push(t, "team/match", "2")
	reg.Push(t, "team/mismatch", "2")
	pinned := reg.Push(t, "team/pin", "2")
	const bogus = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

	ns := env.Namespace(t)
	for _, name := range []string{"match", "mismatch", "unknown", "pin", "pin-missing"} {
		createDeployment(t, env.Clientset, ns, name, name, 1, pod{containers: [][2]string{{"app", host + "/team/" + name + ":1"}}})
	}
	// A second workload running the same image: the registry is asked once.
	createDeployment(t, env.Clientset, ns, "pin-worker", "pin", 1, pod{containers: [][2]string{{"worker", host + "/team/pin:1"}}})

	e := environment(
		svc("match", [3]string{"team/match", "2", matchDigest}),
		svc("mismatch", [3]string{"team/mismatch", "2", bogus}),
		svc("unknown", [3]string{"team/unknown", "2", bogus}),
		svc("pin", [3]string{"team/pin", "2", ""}),
		svc("pin-missing", [3]string{"team/pin-missing", "9", ""}),
	)
	r := newReconciler(t, reconcile.WithVerifyDigests(true), reconcile.WithPinDigests(true), reconcile.WithInsecureRegistries(host))
	before := reg.ManifestRequests()
	got := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}})
	if n := reg.ManifestRequests() - before; n != 5 {
		t.Errorf("registry served %d manifest requests, want 5 (one per distinct image)", n)
	}

	ch := func(service, name, container, to string) reconcile.Change {
		return reconcile.Change{Service: service, Target: "a", Namespace: ns, Kind: "Deployment", Name: name, Container: container,
			From: host + "/team/" + strings.TrimSuffix(service, "-worker") + ":1", To: to}
	}
	wantChanges := []reconcile.Change{
		ch("match", "match", "app", host+"/team/match:2@"+matchDigest),
		ch("pin", "pin", "app", host+"/team/pin:2@"+pinned),
		ch("pin", "pin-worker", "worker", host+"/team/pin:2@"+pinned),
	}
	if diff := cmp.Diff(wantChanges, got.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantProblems := []reconcile.Problem{
		{Service: "mismatch", Target: "a", Message: "dockerDigest " + bogus + " does not match the registry: " + host + "/team/mismatch:2 is " + mustHead(t, reg, "team/mismatch", "2")},
		{Service: "pin-missing", Target: "a", Message: "cannot pin a digest: the registry has no tag " + host + "/team/pin-missing:9"},
		{Service: "unknown", Target: "a", Message: "cannot verify dockerDigest " + bogus + ": the registry has no tag " + host + "/team/unknown:2"},
	}
	if diff := cmp.Diff(wantProblems, got.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	t.Run("without verification or pinning the registry is not asked", func(t *testing.T) {
		r := newReconciler(t)
		before := reg.Requests()
		p := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}})
		if n := reg.Requests() - before; n != 0 {
			t.Errorf("registry served %d requests, want 0", n)
		}
		if len(p.Problems) != 0 || len(p.Changes) != 6 {
			t.Errorf("got %d changes and problems %v; want 6 changes and none", len(p.Changes), p.Problems)
		}
	})
}

// TestPlanRegistryUnreachable: a registry that refuses connections is a
// problem for the services whose images live there, not a failed plan.
func TestPlanRegistryUnreachable(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t)
	d := reg.Push(t, "team/up", "2")
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "down", "down", 0, pod{containers: [][2]string{{"app", "127.0.0.1:1/team/down:1"}}})
	createDeployment(t, env.Clientset, ns, "up", "up", 0, pod{containers: [][2]string{{"app", reg.Host() + "/team/up:1"}}})
	e := environment(svc("down", [3]string{"team/down", "2", ""}), svc("up", [3]string{"team/up", "2", ""}))
	r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithRegistryTimeout(5*time.Second))
	p := mustPlan(t, r, reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}})
	if len(p.Changes) != 1 || p.Changes[0].To != reg.Host()+"/team/up:2@"+d {
		t.Errorf("changes %v; want only up pinned to %s", p.Changes, d)
	}
	if len(p.Problems) != 1 || p.Problems[0].Service != "down" || !strings.HasPrefix(p.Problems[0].Message, "cannot pin a digest for 127.0.0.1:1/team/down:2: ") {
		t.Errorf("problems %v; want one for down saying the digest cannot be pinned", p.Problems)
	}
}

// mustHead pushes nothing; it returns the digest a tag has (pushed earlier).
func mustHead(t *testing.T, reg *registrytest.Registry, repo, tag string) string {
	t.Helper()
	d, err := reg.Digest(t.Context(), repo, tag)
	if err != nil {
		t.Fatalf("reading digest of %s:%s: %v", repo, tag, err)
	}
	return d
}
