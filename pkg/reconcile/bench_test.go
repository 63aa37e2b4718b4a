package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/wire"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// counter counts API requests by verb (WATCH for a watch) and resource, and keeps the body of
// the last PATCH of svc-0000 (to check the raw ceiling sends the same patch).
type counter struct {
	mu    sync.Mutex
	n     map[string]int
	patch []byte
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		// /api(s)/…/namespaces/<ns>/<resource>[/<name>]: count by resource.
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		verb := r.Method
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			verb = "WATCH"
		}
		key := verb + " " + parts[len(parts)-1]
		if i := slices.Index(parts, "namespaces"); i >= 0 && i+2 < len(parts) {
			key = verb + " " + parts[i+2]
		}
		var body []byte
		if r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/svc-0000") && r.GetBody != nil {
			rc, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			body, _ = io.ReadAll(rc)
		}
		c.mu.Lock()
		c.n[key]++
		if body != nil {
			c.patch = body
		}
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *counter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.n
	c.n = map[string]int{}
	return old
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// benchClient is the client the reconciler binary builds (internal/wire:
// protobuf, no client-side rate limit) from the test kubeconfig, with its requests
// counted.
func benchClient(b *testing.B) (kubernetes.Interface, *counter) {
	b.Helper()
	env := cluster.Env(b)
	cnt := &counter{n: map[string]int{}}
	clients, err := wire.NewClients(wire.WithWrapTransport(cnt.wrap))
	if err != nil {
		b.Fatal(err)
	}
	cs, err := clients.Client(env.Kubeconfig, "")
	if err != nil {
		b.Fatal(err)
	}
	return cs, cnt
}

// rawClient is bare client-go from the admin rest.Config with the wire
// settings the reconciler uses (protobuf, client-side rate limit off:
// client-go's default of 5 QPS would make the ceiling meaningless), so the
// ceiling differs from Apply only in Stagehand's own work.
func rawClient(b *testing.B) kubernetes.Interface {
	b.Helper()
	env := cluster.Env(b)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// populate creates n Deployments svc-0000… (replicas 0) and returns a
// manifest naming all of them at tag.
func populate(b *testing.B, c kubernetes.Interface, ns string, n int, tag string) *manifest.Environment {
	b.Helper()
	start := time.Now()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	e := &manifest.Environment{Name: "bench"}
	for i := range n {
		name := fmt.Sprintf("svc-%04d", i)
		e.Services = append(e.Services, manifest.Service{Name: name, Containers: []manifest.Container{{DockerName: "team/" + name, DockerTag: tag}}})
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { firstErr = fmt.Errorf("%v", r) })
				}
			}()
			createDeployment(panicTB{b}, c, ns, name, name, 0, pod{containers: [][2]string{
				{"app", "reg.example.com/team/" + name + ":1"}, {"proxy", "envoyproxy/envoy:v1.30"},
			}})
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("created %d deployments in %s", n, time.Since(start).Round(time.Millisecond))
	return e
}

// panicTB turns Fatalf into a panic so helpers can run in goroutines.
type panicTB struct{ testing.TB }

func (p panicTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (p panicTB) Helper()                        {}

// BenchmarkPlan2000 plans a 2,000-service manifest against 2,000
// Deployments (plus a StatefulSet, DaemonSet and CronJob list each) and
// reports API requests per plan: one list per kind per target.
func BenchmarkPlan2000(b *testing.B) {
	env := cluster.Env(b)
	c, cnt := benchClient(b)
	ns := env.Namespace(b)
	e := populate(b, c, ns, 2000, "2")
	r := newReconciler(b)
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{{Name: "a", Namespace: ns, Client: c}}}
	cnt.reset()
	var p *reconcile.Plan
	for b.Loop() {
		var err error
		if p, err = r.Plan(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	got := cnt.reset()
	total := 0
	for _, v := range got {
		total += v
	}
	if len(p.Changes) != 2000 {
		b.Fatalf("plan has %d changes, want 2000", len(p.Changes))
	}
	b.ReportMetric(float64(total)/float64(b.N), "requests/plan")
	b.Logf("requests over %d plans: %v", b.N, got)
}

// BenchmarkApply500 applies 500 image changes (the rollout wait is off: the
// benchmark control plane runs no controllers) and compares it with (a) the
// raw ceiling, the same strategic merge patches (byte for byte, same field
// manager) sent with bare client-go at the same concurrency, and (b) a
// sequential `kubectl set image` loop, run on 50 changes and reported per
// change.
//
// Stagehand's apply is timed from the Apply call (which plans again to check
// the hash) to the last patch answered: the deploy itself. Apply then writes
// one Event per workload, which in a real apply overlaps the rollout wait;
// the whole call, Events included, is reported too, against raw patches each
// followed by its Event; and so is the deploy with deploy locks on, wired as
// the daemon wires them (Kubernetes lock storage on the same API server:
// checked at plan time, held on the target, re-checked before each patch
// from a watch of the Lock objects).
// The machine is shared, so each round runs the variants back to back and
// the metrics compare sums over the same rounds.
func BenchmarkApply500(b *testing.B) {
	env := cluster.Env(b)
	const n = 500
	c, cnt := benchClient(b)
	ns := env.Namespace(b)
	e := populate(b, c, ns, n, "1")
	req := reconcile.Request{Environment: e, Revision: "r", Targets: []reconcile.Target{{Name: "a", Namespace: ns, Client: c}}}
	r := newReconciler(b, reconcile.WithRolloutTimeout(0), reconcile.WithConcurrency(reconcile.DefaultConcurrency))
	// As the daemon wires it: deploy locks in Kubernetes (here the same API
	// server), checked at plan time, held per target, re-checked before
	// every patch.
	lcfg := rest.CopyConfig(env.Config)
	lcnt := &counter{n: map[string]int{}}
	lcfg.Wrap(lcnt.wrap)
	ks, err := lock.NewKubernetesForConfig(lcfg, ns)
	if err != nil {
		b.Fatal(err)
	}
	// The re-checks before each patch read a watch of the Lock objects.
	watched := ks.Watched()
	wctx, stopWatch := context.WithCancel(context.Background())
	watchStopped := make(chan error, 1)
	go func() { watchStopped <- watched.Run(wctx) }()
	defer func() { stopWatch(); <-watchStopped }()
	for !watched.Synced() {
		time.Sleep(time.Millisecond)
	}
	svc, err := lock.New(watched)
	if err != nil {
		b.Fatal(err)
	}
	checker, err := lock.NewChecker(svc, time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	rLocked := newReconciler(b, reconcile.WithRolloutTimeout(0), reconcile.WithConcurrency(reconcile.DefaultConcurrency), reconcile.WithLocks(checker, checker))
	reqLocked := req
	reqLocked.LockPath = "apps/bench"
	// As the daemon runs them: each reconciler keeps its watch cache of the
	// target, so Apply's re-plan reads workloads from memory, not a list.
	for _, r := range []*reconcile.Reconciler{r, rLocked} {
		done := make(chan error, 1)
		go func() { done <- r.Watch(wctx) }()
		defer func() { stopWatch(); <-done }()
	}
	gen := 1
	nextTag := func() string { gen++; return fmt.Sprintf("%d", gen) }
	// rawPatch is the patch Apply sends for one Deployment's app container.
	rawPatch := func(name, tag string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}},"spec":{"template":{"spec":{"containers":[{"image":"reg.example.com/team/%s:%s","name":"app"}]}}}}`,
			reconcile.RevisionAnnotation, req.Revision, name, tag)
	}

	// stagehand returns the time to the last patch and to Apply's return.
	stagehand := func(b *testing.B, r *reconcile.Reconciler, req reconcile.Request) (deployed, whole time.Duration) {
		prev := fmt.Sprintf(":%d", gen)
		tag := nextTag()
		for i := range e.Services {
			e.Services[i].Containers[0].DockerTag = tag
		}
		// The daemon plans from its watch cache, and an approval of a plan
		// made before the cache saw the last apply would be refused as stale;
		// wait (untimed) until r's cache has seen every previous patch.
		var p *reconcile.Plan
		for {
			var err error
			p, err = r.Plan(context.Background(), req)
			if err != nil || len(p.Changes) != n {
				b.Fatalf("plan: %v, %d changes", err, len(p.Changes))
			}
			if !slices.ContainsFunc(p.Changes, func(c reconcile.Change) bool { return !strings.HasSuffix(c.From, prev) }) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		var mu sync.Mutex
		var last time.Time
		onPatched := reconcile.WithProgress(func(pr reconcile.Progress) {
			if pr.Phase == reconcile.PhasePatched {
				mu.Lock()
				last = time.Now()
				mu.Unlock()
			}
		})
		start := time.Now()
		res, err := r.Apply(context.Background(), req, p.PlanHash, onPatched) // plans again, patches, Events
		whole = time.Since(start)
		if err != nil || res.Failed() || len(res.Workloads) != n {
			b.Fatalf("apply: %v", err)
		}
		cnt.mu.Lock()
		sent := cnt.patch
		cnt.mu.Unlock()
		if want := rawPatch("svc-0000", tag); string(sent) != string(want) {
			b.Fatalf("Apply sent\n%s\nthe raw ceiling sends\n%s", sent, want)
		}
		return last.Sub(start), whole
	}
	rc := rawClient(b)
	raw := func(b *testing.B, withEvents bool) time.Duration {
		tag := nextTag()
		start := time.Now()
		sem := make(chan struct{}, reconcile.DefaultConcurrency)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range n {
			name := fmt.Sprintf("svc-%04d", i)
			body := rawPatch(name, tag)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				d, err := rc.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, body,
					metav1.PatchOptions{FieldManager: reconcile.FieldManager})
				if err != nil {
					failed.Add(1)
					return
				}
				if withEvents {
					ev := &corev1.Event{
						ObjectMeta:     metav1.ObjectMeta{GenerateName: name + ".", Namespace: ns},
						InvolvedObject: corev1.ObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: name, Namespace: ns, UID: d.UID},
						Reason:         "Deploying", Message: "image " + tag, Type: corev1.EventTypeNormal,
						Source: corev1.EventSource{Component: "raw"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
					}
					if _, err := rc.CoreV1().Events(ns).Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			b.Fatalf("%d requests failed", failed.Load())
		}
		return time.Since(start)
	}

	b.Run("interleaved", func(b *testing.B) {
		var sh, shw, shl, rw, rwe time.Duration
		cnt.reset()
		// One apply takes seconds, so b.Loop would stop after one iteration;
		// five rounds per iteration, the variants taking turns to go first,
		// smooth out the machine's noise and any advantage of going first.
		const rounds = 5
		variants := []func(){
			func() { rw += raw(b, false) },
			func() { d, w := stagehand(b, r, req); sh += d; shw += w },
			func() { d, _ := stagehand(b, rLocked, reqLocked); shl += d },
			func() { rwe += raw(b, true) },
		}
		for b.Loop() {
			for k := range rounds { // the variants take turns to go first
				for v := range variants {
					variants[(k+v)%len(variants)]()
				}
			}
		}
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*rounds*n) }
		b.ReportMetric(per(sh), "stagehand-ns/change")
		b.ReportMetric(per(shw), "stagehand+events-ns/change")
		b.ReportMetric(per(rw), "raw-ns/change")
		b.ReportMetric(per(rwe), "raw+events-ns/change")
		b.ReportMetric(per(shl), "stagehand-locks-ns/change")
		b.ReportMetric(100*float64(rw)/float64(sh), "%-of-raw")
		b.ReportMetric(100*float64(rw)/float64(shl), "%-of-raw-with-locks")
		b.ReportMetric(100*float64(rwe)/float64(shw), "%-of-raw+events")
		b.Logf("stagehand requests over %d applies (with and without locks): %v", 2*b.N*rounds, cnt.reset())
		b.Logf("lock requests over %d applies: %v", b.N*rounds, lcnt.reset())
	})

	b.Run("kubectl-set-image-50", func(b *testing.B) {
		const m = 50
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			b.Skip("kubectl not on PATH")
		}
		for b.Loop() {
			b.StopTimer()
			tag := nextTag()
			b.StartTimer()
			for i := range m {
				name := fmt.Sprintf("svc-%04d", i)
				out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "-n", ns, "set", "image",
					"deployment/"+name, "app=reg.example.com/team/"+name+":"+tag).CombinedOutput()
				if err != nil {
					b.Fatalf("kubectl set image: %v\n%s", err, out)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*m), "ns/change")
	})
}
