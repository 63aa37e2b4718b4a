package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the control plane of the Kubernetes storage tests; the model and
// service tests run without one.
var cluster testenv.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, testenv.WithCRDs("crd/locks.stagehand.io.yaml")))
}

func newKubeStorage(t *testing.T) *Kubernetes {
	t.Helper()
	env := cluster.Env(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side rate limit: 50 lockers race for real
	k, err := NewKubernetesForConfig(cfg, env.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKubeService(t *testing.T, c *fakeClock) *Service {
	t.Helper()
	s, err := New(newKubeStorage(t), WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServiceKubernetes(t *testing.T) {
	testServiceRules(t, newKubeService)
}

func TestConcurrentLockKubernetes(t *testing.T) {
	c := newFakeClock()
	testConcurrentLock(t, newKubeService(t, c), c)
}

func TestObjectName(t *testing.T) {
	seen := map[string]string{}
	for _, p := range []string{
		"apps", "apps/staging", "apps/staging/a/auth-app/main", "-x-/y-", "a/b", "a-b", "ab",
		strings.Repeat("abcdefgh/", 28) + "x", strings.Repeat("a", 100) + "/b",
	} {
		n := ObjectName(p)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("ObjectName(%q) = %q: %v", p, n, errs)
		}
		if other, ok := seen[n]; ok {
			t.Errorf("ObjectName(%q) = ObjectName(%q) = %q", p, other, n)
		}
		seen[n] = p
	}
	if n := ObjectName("apps/staging/a"); !strings.HasPrefix(n, "apps.staging.a-") || len(n) != len("apps.staging.a-")+10 {
		t.Errorf("ObjectName(apps/staging/a) = %q, want apps.staging.a-<10 hex>", n)
	}
}

func TestKubernetesRoundTrip(t *testing.T) {
	ctx := context.Background()
	k := newKubeStorage(t)
	c := newFakeClock()
	in := Lock{
		Path: "apps/staging/a/chat-app/main", Type: Deploy, Author: "dev@example.com",
		Links: map[string]string{"pipeline": "https://ci.example.com/p/1"}, Allow: []Type{Automation},
		CreatedAt: c.Now(), UpdatedAt: c.Now(), ExpiresAt: c.Now().Add(5 * time.Minute),
		Env: Env{Cluster: "apps", Account: "staging", Target: "a"},
		CI:  &CI{Project: "acme/chat-app", Ref: "main", Commit: "abc", Pipeline: "1", Job: "2"},
	}
	created, err := k.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if created.ID == "" || created.Version == "" {
		t.Errorf("created lock has no ID/Version: %+v", created)
	}
	got, err := k.Get(ctx, in.Path)
	if err != nil {
		t.Fatal(err)
	}
	in.ID, in.Version = created.ID, created.Version
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := k.Create(ctx, in); !errors.Is(err, ErrExists) {
		t.Errorf("second Create: error = %v, want ErrExists", err)
	}
	stale := got
	stale.Version = "1"
	if err := k.Delete(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Errorf("Delete with a stale version: error = %v, want ErrConflict", err)
	}
	if _, err := k.Replace(ctx, stale, got); !errors.Is(err, ErrConflict) {
		t.Errorf("Replace with a stale version: error = %v, want ErrConflict", err)
	}
	if err := k.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Get(ctx, in.Path); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: error = %v, want ErrNotFound", err)
	}
	if err := k.Delete(ctx, got); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: error = %v, want ErrNotFound", err)
	}
}

// TestKubectlColumns asks the API server for the table kubectl prints.
func TestKubectlColumns(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	k, err := NewKubernetesForConfig(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2030, 12, 31, 12, 0, 0, 0, time.UTC)
	l := Lock{Path: "apps/acceptance", Type: Automation, Author: "qa@example.com", CreatedAt: exp.Add(-time.Hour), UpdatedAt: exp.Add(-time.Hour), ExpiresAt: exp, Env: Env{Cluster: "testing", Account: "staging"}}
	if _, err := k.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	body, err := env.Clientset.CoreV1().RESTClient().Get().AbsPath("/apis/stagehand.io/v1alpha1/namespaces/"+ns+"/locks").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		ColumnDefinitions []struct{ Name string } `json:"columnDefinitions"`
		Rows              []struct{ Cells []any } `json:"rows"`
	}
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Path", "Type", "Author", "Expires", "Env", "Allow", "Age"}, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows: %v", table.Rows)
	}
	got := fmt.Sprint(table.Rows[0].Cells[1:5])
	if want := "[apps/acceptance automation qa@example.com 2030-12-31T12:00:00Z]"; got != want {
		t.Errorf("cells %s, want %s", got, want)
	}
}

func TestKubernetesMissingCRD(t *testing.T) {
	env := cluster.Env(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A storage for a resource the server does not serve behaves like a missing CRD.
	k := &Kubernetes{client: dyn.Resource(Resource.GroupResource().WithVersion("v9")), namespace: env.Namespace(t)}
	_, err = k.Get(context.Background(), "apps")
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "locks.stagehand.io CustomResourceDefinition installed?") {
		t.Errorf("error = %v, want a hint about the CRD", err)
	}
}

// BenchmarkCheck measures one recursive check of a five-segment path (what
// the reconciler does per changed service) with a lock at a prefix.
func BenchmarkCheck(b *testing.B) {
	kube := func(b *testing.B) Storage {
		env := cluster.Env(b)
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS = -1
		k, err := NewKubernetesForConfig(cfg, env.Namespace(b))
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	for _, tc := range []struct {
		name    string
		storage func(b *testing.B) Storage
		others  int // locks elsewhere: a check lists the namespace's Lock objects
	}{
		{"memory", func(*testing.B) Storage { return NewMemory() }, 0},
		{"kubernetes", kube, 0},
		{"kubernetes-with-200-other-locks", kube, 200},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			c := newFakeClock()
			s, err := New(tc.storage(b), WithClock(c.Now))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Lock(ctx, newLock(c, "apps/staging", Automation, time.Hour)); err != nil {
				b.Fatal(err)
			}
			for i := range tc.others {
				if _, err := s.Lock(ctx, newLock(c, fmt.Sprintf("apps/other-%d", i), Deploy, time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				got, err := s.Check(ctx, "apps/staging/a/chat-app/main", Deploy, true)
				if err != nil || len(got) != 1 {
					b.Fatalf("Check = %v, %v", got, err)
				}
			}
		})
	}
}

func TestParentLockedDuringLockKubernetes(t *testing.T) {
	testParentLockedDuringLock(t, newKubeStorage(t))
}

// TestHandMadeLockObject: a Lock object applied with kubectl (or from a GitOps
// repository) has a name of its own and none of Stagehand's labels. It blocks
// like any other: checks at and beneath its path see it, locking its path or
// beneath is refused, and unlocking removes it.
func TestHandMadeLockObject(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	c := newFakeClock()
	k := newKubeStorage(t)
	s, err := New(k, WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stagehand.io/v1alpha1", "kind": "Lock",
		"metadata": map[string]any{"name": "holiday-freeze"},
		"spec": map[string]any{"path": "apps/production", "type": "freeze", "author": "release-manager",
			"createdAt": "2022-12-20T09:00:00Z", "updatedAt": "2022-12-20T09:00:00Z", "expiresAt": "2023-01-02T09:00:00Z"},
	}}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	res := dyn.Resource(Resource).Namespace(k.namespace)
	if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path      string
		recursive bool
	}{{"apps/production/a/api", true}, {"apps/production", false}} {
		got, err := s.Check(ctx, tc.path, Deploy, tc.recursive)
		if err != nil || len(got) != 1 || got[0].Author != "release-manager" {
			t.Errorf("Check(%s, recursive %v) = %+v, %v; want the freeze", tc.path, tc.recursive, got, err)
		}
	}
	for _, p := range []string{"apps/production", "apps/production/a"} {
		var le *LockedError
		if _, err := s.Lock(ctx, newLock(c, p, Deploy, time.Hour)); !errors.As(err, &le) || le.Locks[0].Author != "release-manager" {
			t.Errorf("Lock(%s) = %v, want locked by the freeze", p, err)
		}
	}
	if all, err := s.List(ctx, "apps"); err != nil || len(all) != 1 {
		t.Errorf("List = %+v, %v; want the freeze only", all, err)
	}
	// Get finds it by its path (through the watch cache, then read again by name): changed right before,
	// it is the changed object that Get returns.
	if l, err := s.Get(ctx, "apps/production"); err != nil || l.Author != "release-manager" {
		t.Errorf("Get = %+v, %v; want the freeze", l, err)
	}
	obj, err = res.Get(ctx, "holiday-freeze", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, "incident-commander", "spec", "author"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Get(ctx, "apps/production"); err != nil || l.Author != "incident-commander" {
		t.Errorf("Get after the change = %+v, %v; want the freeze by incident-commander", l, err)
	}
	if _, err := s.Unlock(ctx, "apps/production", Freeze, false); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if _, err := res.Get(ctx, "holiday-freeze", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hand-made object is still there: %v", err)
	}
	if l, err := s.Get(ctx, "apps/production"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Unlock = %+v, %v; want ErrNotFound", l, err)
	}
	if got, err := s.Check(ctx, "apps/production/a/api", Deploy, true); err != nil || len(got) != 0 {
		t.Errorf("Check after Unlock = %+v, %v; want free", got, err)
	}
}

// TestLockInMissingNamespace: the error names the namespace that does not
// exist, not "no lock".
func TestLockInMissingNamespace(t *testing.T) {
	env := cluster.Env(t)
	k, err := NewKubernetesForConfig(env.Config, "no-such-namespace-for-locks")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Lock(context.Background(), Lock{Path: "apps/prod", Type: Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)})
	if err == nil || !strings.Contains(err.Error(), `namespace "no-such-namespace-for-locks" does not exist`) {
		t.Errorf("Lock = %v, want an error naming the missing namespace", err)
	}
}

// BenchmarkGetAbsent measures a Get of a path no lock holds (the deploy hot
// path's rollback-hold read, a lock check of one path): the object is not
// found by its name, and the hand-made Lock objects are looked through. In
// "after-other-writes" another resource (a ConfigMap, as the daemon's state
// writes) is written before each Get, untimed: the API server's revision
// then moves past the last Lock event, as it does in a running cluster.
func BenchmarkGetAbsent(b *testing.B) {
	for _, other := range []bool{false, true} {
		name := "idle"
		if other {
			name = "after-other-writes"
		}
		b.Run(name, func(b *testing.B) {
			env := cluster.Env(b)
			cfg := rest.CopyConfig(env.Config)
			cfg.QPS = -1
			ns := env.Namespace(b)
			k, err := NewKubernetesForConfig(cfg, ns)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			c := newFakeClock()
			s, err := New(k, WithClock(c.Now))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Lock(ctx, newLock(c, "apps/staging", Automation, time.Hour)); err != nil {
				b.Fatal(err)
			}
			cms := env.Clientset.CoreV1().ConfigMaps(ns)
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if other {
					b.StopTimer()
					i++
					cm.Data = map[string]string{"n": fmt.Sprint(i)}
					if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if _, err := s.Get(ctx, "apps/production/hold"); !errors.Is(err, ErrNotFound) {
					b.Fatalf("Get = %v, want ErrNotFound", err)
				}
			}
		})
	}
}
