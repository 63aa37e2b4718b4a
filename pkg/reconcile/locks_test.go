package reconcile_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// memLocks is a hand-written in-memory lock table: a lock at a path blocks
// that path and everything under it.
type memLocks struct {
	mu    sync.Mutex
	locks map[string]string // path -> message
	held  []string
	// onBlocking runs before each Blocking call (to take a lock mid-apply).
	onBlocking func(path string)
}

func (m *memLocks) Blocking(_ context.Context, path, lockType string) ([]string, error) {
	if m.onBlocking != nil {
		m.onBlocking(path)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var paths []string
	for p := range m.locks {
		if path == p || strings.HasPrefix(path, p+"/") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths) // shortest prefix first, as pkg/lock reports them
	var out []string
	for _, p := range paths {
		if !slices.Contains(m.held, p) || m.locks[p] != heldMessage(p) {
			out = append(out, m.locks[p]) // what Hold took is not reported, as pkg/lock's Checker does
		}
	}
	return out, nil
}

func heldMessage(path string) string { return "Locked " + path + " for a deploy" }

func (m *memLocks) Hold(_ context.Context, path string, ttl time.Duration, author string) (func(context.Context) error, error) {
	m.lock(path, heldMessage(path))
	m.mu.Lock()
	m.held = append(m.held, path)
	m.mu.Unlock()
	return func(context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.locks, path)
		return nil
	}, nil
}

func (m *memLocks) lock(path, msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.locks[path] = msg
}

var (
	_ reconcile.LockChecker = (*memLocks)(nil)
	_ reconcile.LockHolder  = (*memLocks)(nil)
)

// TestLocks: a locked service is blocked in the plan; applying holds the
// target lock; a lock taken mid-apply stops the patches not yet sent.
func TestLocks(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	for _, name := range []string{"a1", "b2", "c3"} {
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
	}
	e := environment(svc("a1", [3]string{"a1", "2", ""}), svc("b2", [3]string{"b2", "2", ""}), svc("c3", [3]string{"c3", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	locks := &memLocks{locks: map[string]string{"apps/prod/t1/c3": "An incident on c3"}}
	r := newReconciler(t, reconcile.WithLocks(locks, locks), reconcile.WithConcurrency(1), reconcile.WithRolloutTimeout(0))

	plan := mustPlan(t, r, req)
	var blocked []string
	for _, b := range plan.Blocked {
		blocked = append(blocked, b.Service+": "+strings.Join(b.Locks, ";"))
	}
	if diff := cmp.Diff([]string{"c3: An incident on c3"}, blocked); diff != "" {
		t.Errorf("blocked (-want +got):\n%s", diff)
	}
	if len(plan.Changes) != 2 {
		t.Fatalf("changes = %v, want a1 and b2", plan.Changes)
	}

	// Apply plans again (first check of a1), then re-checks a1 right before
	// patching it: at that moment someone locks b2, which must not be patched.
	a1Checks := 0
	locks.onBlocking = func(path string) {
		if path == "apps/prod/t1/a1" {
			if a1Checks++; a1Checks == 2 {
				locks.lock("apps/prod/t1/b2", "An automation run on b2")
			}
		}
	}
	res, err := r.Apply(context.Background(), req, plan.PlanHash)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	got := map[string]string{}
	for _, w := range res.Workloads {
		got[w.Name] = string(w.Outcome) + ": " + w.Message
	}
	want := map[string]string{"a1": "patched: rollout not waited for", "b2": "blocked: An automation run on b2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"apps/prod/t1"}, locks.held); diff != "" {
		t.Errorf("held locks (-want +got):\n%s", diff)
	}
	if _, ok := locks.locks["apps/prod/t1"]; ok {
		t.Errorf("target lock still held after Apply")
	}
	if _, c := deploymentImages(t, ns, "b2"); c[0] != "reg.example.com/b2:1" {
		t.Errorf("b2 image = %s, want untouched", c[0])
	}
	if _, c := deploymentImages(t, ns, "a1"); c[0] != "reg.example.com/a1:2" {
		t.Errorf("a1 image = %s, want reg.example.com/a1:2", c[0])
	}
}

// TestLocksWithLockService runs plan and apply against pkg/lock's real
// service and adapter (memory storage): an incident lock on one service
// blocks it, the apply holds and releases the deploy lock on the target, and
// its own lock does not block its patches.
func TestLocksWithLockService(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	for _, name := range []string{"a1", "c3"} {
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
	}
	svcs, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svcs.Lock(ctx, lock.Lock{Path: "apps/prod/t1/c3", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	checker, err := lock.NewChecker(svcs, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	e := environment(svc("a1", [3]string{"a1", "2", ""}), svc("c3", [3]string{"c3", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	var heldDuringApply []lock.Lock
	r := newReconciler(t, reconcile.WithLocks(checker, checker), reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)
	if len(plan.Blocked) != 1 || plan.Blocked[0].Service != "c3" || len(plan.Blocked[0].Locks) != 1 || !strings.Contains(plan.Blocked[0].Locks[0], "incident") {
		t.Fatalf("blocked %+v; want c3 blocked by the incident", plan.Blocked)
	}
	res, err := r.Apply(ctx, req, plan.PlanHash, reconcile.WithProgress(func(reconcile.Progress) {
		heldDuringApply, _ = svcs.List(ctx, "apps/prod/t1")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != 1 || res.Workloads[0].Name != "a1" || res.Workloads[0].Outcome != reconcile.OutcomePatched {
		t.Errorf("workloads %+v; want a1 patched", res.Workloads)
	}
	var paths []string
	for _, l := range heldDuringApply {
		paths = append(paths, l.Path+" "+string(l.Type))
	}
	slices.Sort(paths)
	if diff := cmp.Diff([]string{"apps/prod/t1 deploy", "apps/prod/t1/c3 incident"}, paths); diff != "" {
		t.Errorf("locks during apply (-want +got):\n%s", diff)
	}
	after, err := svcs.List(ctx, "apps/prod/t1")
	if err != nil || len(after) != 1 {
		t.Errorf("locks after apply: %v, %v; want only the incident", after, err)
	}
}

// listingLocks adds LockLister to memLocks and counts the calls of each kind.
type listingLocks struct {
	*memLocks
	blocking, within atomic.Int32
}

func (l *listingLocks) Blocking(ctx context.Context, path, lockType string) ([]string, error) {
	l.blocking.Add(1)
	return l.memLocks.Blocking(ctx, path, lockType)
}

func (l *listingLocks) BlockingWithin(_ context.Context, prefix, _ string) (map[string][]string, error) {
	l.within.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for p, msg := range l.locks {
		if prefix == p || strings.HasPrefix(prefix, p+"/") || strings.HasPrefix(p, prefix+"/") {
			out[p] = append(out[p], msg)
		}
	}
	return out, nil
}

// cachedLocks adds CachedLockLister to listingLocks (its cache is the same
// map) and counts the cached queries.
type cachedLocks struct {
	*listingLocks
	cached atomic.Int32
}

func (l *cachedLocks) BlockingWithinCached(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	l.cached.Add(1)
	l.within.Add(-1) // counted below as a cached query, not a fresh one
	return l.listingLocks.BlockingWithin(ctx, prefix, lockType)
}

// TestPlanReadsCachedLocks: Plan, which reads the workloads from the
// watches, reads the locks from the lock store's cache too; Apply's own plan
// checks them afresh (and so decides), and re-checks each patch from the
// cache.
func TestPlanReadsCachedLocks(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "web", "web", 0, pod{containers: [][2]string{{"web", "reg.example.com/web:1"}}})
	req := reconcile.Request{Environment: environment(svc("web", [3]string{"web", "2", ""})), Revision: "r",
		Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	locks := &cachedLocks{listingLocks: &listingLocks{memLocks: &memLocks{locks: map[string]string{}}}}
	r := newReconciler(t, reconcile.WithLocks(locks, nil), reconcile.WithRolloutTimeout(0))
	p := mustPlan(t, r, req)
	if fresh, cached := locks.within.Load(), locks.cached.Load(); fresh != 0 || cached != 1 {
		t.Errorf("Plan asked %d fresh and %d cached lock queries; want 0 and 1", fresh, cached)
	}
	if _, err := r.Apply(context.Background(), req, p.PlanHash); err != nil {
		t.Fatal(err)
	}
	if fresh := locks.within.Load(); fresh != 1 {
		t.Errorf("Apply asked %d fresh lock queries; want 1 (its plan's)", fresh)
	}
}

var (
	_ reconcile.LockLister = (*listingLocks)(nil)
	_ reconcile.LockLister = (*lock.Checker)(nil) // the plan's batched path is the one the binaries take
)

// TestPlanLocksBatched: a LockChecker that is also a LockLister is asked once
// per target, however many services change, and blocks exactly what
// per-service Blocking calls block.
func TestPlanLocksBatched(t *testing.T) {
	env := cluster.Env(t)
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	var services []manifest.Service
	for i := range 12 {
		name := fmt.Sprintf("s%d", i)
		services = append(services, svc(name, [3]string{name, "2", ""}))
		for _, ns := range []string{nsA, nsB} {
			createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
		}
	}
	req := reconcile.Request{Environment: environment(services...), Revision: "r",
		Targets: []reconcile.Target{target(t, "t1", nsA), target(t, "t2", nsB)}, LockPath: "apps/prod"}
	table := map[string]string{
		"apps/prod/t1/s1":  "An incident on s1",
		"apps/prod/t1/s10": "An automation run on s10",
		"apps/prod/t1/s1x": "a lock on s1x, not a prefix of s1",
		"apps/prod/t2":     "A freeze of t2",
		"apps":             "An automation lock on apps (allows deploys in real life; blocks here)",
		"apps/staging/t1":  "another environment",
	}
	plain := &memLocks{locks: maps.Clone(table)}
	batched := &listingLocks{memLocks: &memLocks{locks: maps.Clone(table)}}

	want := mustPlan(t, newReconciler(t, reconcile.WithLocks(plain, nil)), req)
	got := mustPlan(t, newReconciler(t, reconcile.WithLocks(batched, nil)), req)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan with a LockLister differs from per-service Blocking (-want +got):\n%s", diff)
	}
	if len(got.Blocked) != 24 || len(got.Changes) != 0 {
		t.Errorf("%d blocked, %d changes; want all 24 blocked (apps blocks everything)", len(got.Blocked), len(got.Changes))
	}
	byService := map[string]int{}
	for _, b := range got.Blocked {
		if b.Target == "t1" {
			byService[b.Service] = len(b.Locks)
		}
	}
	if byService["s1"] != 2 || byService["s10"] != 2 || byService["s2"] != 1 {
		t.Errorf("locks per t1 service %v; want s1 and s10 two (apps and their own), s2 one", byService)
	}
	if n, m := batched.within.Load(), batched.blocking.Load(); n != 2 || m != 0 {
		t.Errorf("BlockingWithin called %d times and Blocking %d; want 2 (one per target) and 0", n, m)
	}

	delete(plain.locks, "apps")
	delete(batched.locks, "apps")
	want = mustPlan(t, newReconciler(t, reconcile.WithLocks(plain, nil)), req)
	got = mustPlan(t, newReconciler(t, reconcile.WithLocks(batched, nil)), req)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan with a LockLister differs from per-service Blocking (-want +got):\n%s", diff)
	}
	var blocked []string
	for _, b := range got.Blocked {
		blocked = append(blocked, b.Target+"/"+b.Service)
	}
	if len(blocked) != 14 || !slices.Contains(blocked, "t1/s1") || !slices.Contains(blocked, "t1/s10") || slices.Contains(blocked, "t1/s11") {
		t.Errorf("blocked %v; want t1/s1, t1/s10 and all 12 of t2", blocked)
	}
}

// TestPlanLockRequestsKubernetes plans with pkg/lock's Checker over
// Kubernetes lock storage on the real API server: the lock requests of a
// plan do not grow with the number of services, and a locked service is
// still blocked.
func TestPlanLockRequestsKubernetes(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns, lockNS := env.Namespace(t), env.Namespace(t)
	cnt := &counter{n: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(cnt.wrap)
	st, err := lock.NewKubernetesForConfig(cfg, lockNS)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := lock.New(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Lock(ctx, lock.Lock{Path: "apps/prod/t1/s3", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	checker, err := lock.NewChecker(svcs, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	r := newReconciler(t, reconcile.WithLocks(checker, nil))

	var services []manifest.Service
	lockRequests := map[int]int{}
	for _, n := range []int{5, 40} {
		for i := len(services); i < n; i++ {
			name := fmt.Sprintf("s%d", i)
			createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
			services = append(services, svc(name, [3]string{name, "2", ""}))
		}
		req := reconcile.Request{Environment: environment(services...), Revision: "r", Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
		// A plan reads the locks from the API server's watch cache: wait
		// (uncounted) until the incident has reached it.
		testenv.WaitFor(t, 30*time.Second, "the incident in the watch cache", func() bool {
			m, err := checker.BlockingWithinCached(ctx, "apps/prod/t1", reconcile.LockTypeDeploy)
			return err == nil && len(m["apps/prod/t1/s3"]) == 1
		})
		cnt.reset()
		p := mustPlan(t, r, req)
		for k, v := range cnt.reset() {
			if strings.HasSuffix(k, " locks") {
				lockRequests[n] += v
			}
		}
		if len(p.Blocked) != 1 || p.Blocked[0].Service != "s3" || len(p.Changes) != n-1 {
			t.Errorf("%d services: blocked %v and %d changes; want s3 blocked and %d changes", n, p.Blocked, len(p.Changes), n-1)
		}
	}
	if lockRequests[5] == 0 || lockRequests[5] != lockRequests[40] {
		t.Errorf("lock requests per plan by number of services: %v; want the same non-zero number", lockRequests)
	}
}

// TestLockTakenMidApplyWithLockService: with the binaries' wiring (pkg/lock's
// Checker, a CachedLockLister, over Kubernetes storage), the coalesced
// re-checks before each patch still see a lock taken mid-apply: once a1 is patched,
// an incident locks all of apps/prod (beneath, the apply's own deploy lock on
// the target refuses other locks), and b2 is not patched.
func TestLockTakenMidApplyWithLockService(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	for _, name := range []string{"a1", "b2"} {
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
	}
	ks, err := lock.NewKubernetesForConfig(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := lock.New(ks)
	if err != nil {
		t.Fatal(err)
	}
	checker, err := lock.NewChecker(svcs, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	e := environment(svc("a1", [3]string{"a1", "2", ""}), svc("b2", [3]string{"b2", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	r := newReconciler(t, reconcile.WithLocks(checker, checker), reconcile.WithConcurrency(1), reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)
	res, err := r.Apply(ctx, req, plan.PlanHash, reconcile.WithProgress(func(p reconcile.Progress) {
		if p.Name == "a1" && p.Phase == reconcile.PhasePatched {
			if _, err := svcs.Lock(ctx, lock.Lock{Path: "apps/prod", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
				t.Errorf("locking apps/prod: %v", err)
			}
			// The re-checks read the API server's watch cache (CachedLockLister):
			// the lock counts once it is there, milliseconds later.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if ls, err := ks.ListCached(ctx, "apps"); err == nil && len(ls) > 1 {
					break
				}
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range res.Workloads {
		got[w.Name] = string(w.Outcome)
	}
	if diff := cmp.Diff(map[string]string{"a1": "patched", "b2": "blocked"}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if _, c := deploymentImages(t, ns, "b2"); c[0] != "reg.example.com/b2:1" {
		t.Errorf("b2 image = %s, want untouched", c[0])
	}
}

// TestLockTakenMidApplyWithWatchedLocks: with the re-checks read from a
// watch of the Lock objects (lock.Watched), a lock taken mid-apply by
// another writer stops every later patch once the watch has delivered it:
// within the watch's latency, before the next patch.
func TestLockTakenMidApplyWithWatchedLocks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := cluster.Env(t)
	ns := env.Namespace(t)
	names := []string{"a1", "b2", "c3"}
	for _, name := range names {
		createDeployment(t, env.Clientset, ns, name, name, 0, pod{containers: [][2]string{{"app", "reg.example.com/" + name + ":1"}}})
	}
	ks, err := lock.NewKubernetesForConfig(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	watched := ks.Watched()
	stopped := make(chan error, 1)
	go func() { stopped <- watched.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	for deadline := time.Now().Add(10 * time.Second); !watched.Synced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lock watch never caught up")
		}
	}
	svcs, err := lock.New(watched)
	if err != nil {
		t.Fatal(err)
	}
	other, err := lock.New(ks) // another writer: the CLI, the REST API, kubectl
	if err != nil {
		t.Fatal(err)
	}
	checker, err := lock.NewChecker(svcs, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	e := environment(svc("a1", [3]string{"a1", "2", ""}), svc("b2", [3]string{"b2", "2", ""}), svc("c3", [3]string{"c3", "2", ""}))
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	r := newReconciler(t, reconcile.WithLocks(checker, checker), reconcile.WithConcurrency(1), reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)
	var latency time.Duration
	res, err := r.Apply(ctx, req, plan.PlanHash, reconcile.WithProgress(func(p reconcile.Progress) {
		if p.Name != "a1" || p.Phase != reconcile.PhasePatched {
			return
		}
		// An incident on all of apps/prod (beneath, the apply's own deploy
		// lock on the target refuses other locks).
		if _, err := other.Lock(ctx, lock.Lock{Path: "apps/prod", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Errorf("locking apps/prod: %v", err)
		}
		start := time.Now()
		for deadline := start.Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if ls, err := watched.ListCached(ctx, "apps"); err == nil && len(ls) == 2 { // the apply's own lock and the incident
				latency = time.Since(start)
				return
			}
		}
		t.Error("the watch never delivered the lock")
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the lock reached the watch %s after it was written", latency)
	got := map[string]string{}
	for _, w := range res.Workloads {
		got[w.Name] = string(w.Outcome)
	}
	if diff := cmp.Diff(map[string]string{"a1": "patched", "b2": "blocked", "c3": "blocked"}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for _, name := range names[1:] {
		if _, c := deploymentImages(t, ns, name); c[0] != "reg.example.com/"+name+":1" {
			t.Errorf("%s image = %s, want untouched", name, c[0])
		}
	}
}

// foreignAfterHold holds through pkg/lock's Checker and, in the instant after
// each Hold, lets someone else lock the environment.
type foreignAfterHold struct {
	*lock.Checker
	svc *lock.Service
}

func (f foreignAfterHold) Hold(ctx context.Context, path string, ttl time.Duration, author string) (func(context.Context) error, error) {
	rel, err := f.Checker.Hold(ctx, path, ttl, author)
	if err != nil {
		return nil, err
	}
	_, err = f.svc.Lock(ctx, lock.Lock{Path: "apps/prod", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)})
	return rel, err
}

// TestForeignLockRightAfterHold: a lock someone takes right after the apply
// took its own deploy lock stops the apply; it is not mistaken for the
// apply's own lock.
func TestForeignLockRightAfterHold(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "a1", "a1", 0, pod{containers: [][2]string{{"app", "reg.example.com/a1:1"}}})
	svcs, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	checker, err := lock.NewChecker(svcs, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{Environment: environment(svc("a1", [3]string{"a1", "2", ""})), Revision: "r",
		Targets: []reconcile.Target{target(t, "t1", ns)}, LockPath: "apps/prod"}
	r := newReconciler(t, reconcile.WithLocks(checker, foreignAfterHold{checker, svcs}), reconcile.WithRolloutTimeout(0))
	plan := mustPlan(t, r, req)
	res, err := r.Apply(context.Background(), req, plan.PlanHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != 1 || res.Workloads[0].Outcome != reconcile.OutcomeBlocked || !strings.Contains(res.Workloads[0].Message, "apps/prod is locked") {
		t.Errorf("a1: %s %q; want blocked by the incident lock on apps/prod", res.Workloads[0].Outcome, res.Workloads[0].Message)
	}
	if _, c := deploymentImages(t, ns, "a1"); c[0] != "reg.example.com/a1:1" {
		t.Errorf("a1 image = %s, want untouched", c[0])
	}
}
