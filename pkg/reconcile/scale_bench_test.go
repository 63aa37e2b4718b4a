package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// BenchmarkScale10k plans an environment of 500 services over 20 targets,
// 10 namespaces on each of two API servers (the package's control plane and
// a second one started here): 10,000 Deployments, as the daemon plans it,
// with Watch running. The first pass fills the watches; the benchmark then
// times steady-state passes (nothing to change) and reports per pass the
// List and watch requests sent to both API servers (goal: no List), and,
// after the passes, the process's resident memory (VmRSS, goal < 150 MB)
// and the Go heap that is live after a GC.
func BenchmarkScale10k(b *testing.B) {
	const (
		targetsPerServer = 10
		services         = 500
	)
	second, err := testenv.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer second.Stop()
	envs := []*testenv.Env{cluster.Env(b), second}

	var targets []reconcile.Target
	var counters []*counter
	var e *manifest.Environment
	var mu sync.Mutex
	start := time.Now()
	sem := make(chan struct{}, 4) // namespaces filled at once, 32 creations each
	var wg sync.WaitGroup
	for i, env := range envs {
		c, cnt := countedClient(b, env)
		counters = append(counters, cnt)
		for j := range targetsPerServer {
			ns := env.Namespace(b)
			targets = append(targets, reconcile.Target{Name: fmt.Sprintf("s%d-t%02d", i, j), Namespace: ns, Client: c})
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				m := populate(b, c, ns, services, "1") // with the reconciler's client: no client-side rate limit
				mu.Lock()
				e = m
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	b.Logf("created %d Deployments over %d targets on 2 API servers in %s", len(targets)*services, len(targets), time.Since(start).Round(time.Second))

	// What creating the Deployments allocated is the benchmark's, not the
	// reconciler's: give it back before the reconciler starts.
	debug.FreeOSMemory()
	b.Logf("before the reconciler: RSS %.1f MB", rssMB(b))

	r := newReconciler(b)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Watch(ctx) }()
	defer func() { cancel(); <-stopped }()
	for !reconcile.Watching(r) {
		time.Sleep(time.Millisecond)
	}
	resetAll(counters)
	req := reconcile.Request{Environment: e, Revision: "r", Targets: targets}
	pass := func() *reconcile.Plan {
		p, err := r.Plan(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Changes) != 0 || len(p.Problems) != 0 || p.Unchanged != len(targets)*services {
			b.Fatalf("plan: %d changes, %d problems (%v), %d unchanged", len(p.Changes), len(p.Problems), firstProblem(p), p.Unchanged)
		}
		return p
	}
	first := time.Now()
	pass()
	b.Logf("first pass (fills the watches): %s, requests %v", time.Since(first).Round(time.Millisecond), resetAll(counters))

	for b.Loop() {
		pass()
	}
	got := resetAll(counters)
	lists, watches := 0, 0
	for k, n := range got {
		switch {
		case strings.HasPrefix(k, "GET "):
			lists += n
		case strings.HasPrefix(k, "WATCH "):
			watches += n
		}
	}
	b.ReportMetric(float64(lists)/float64(b.N), "lists/pass")
	b.ReportMetric(float64(watches)/float64(b.N), "watches/pass")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/pass")
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(rssMB(b), "rss-MB")
	b.Logf("requests over %d steady passes: %v", b.N, got)
}

// countedClient is the reconciler's client (internal/wire) of env's API
// server, its requests counted.
func countedClient(b *testing.B, env *testenv.Env) (kubernetes.Interface, *counter) {
	b.Helper()
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

func resetAll(cs []*counter) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		for k, n := range c.reset() {
			out[k] += n
		}
	}
	return out
}

func firstProblem(p *reconcile.Plan) string {
	if len(p.Problems) == 0 {
		return ""
	}
	return p.Problems[0].Target + ": " + p.Problems[0].Message
}

// rssMB reads the process's resident set size from /proc/self/status.
func rssMB(b *testing.B) float64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
