package daemon

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// BenchmarkWebhookToPatch measures the push webhook of a commit already on
// the git server until the patched Deployment is observed through the API
// server (target p50 < 150ms), as BenchmarkWebhookToPatchReplicas does. The
// source polls hourly, so only the webhook can wake it.
func BenchmarkWebhookToPatch(b *testing.B) {
	benchmarkLatency(b, latencyBench{interval: time.Hour, webhook: true})
}

// BenchmarkWebhookToPatchTraced is BenchmarkWebhookToPatch with tracing on
// (internal/tracing), exporting every span over OTLP/HTTP to an in-process
// receiver as `reconciler run` exports them to a collector: the webhook's
// receipt, the pass, its steps, the patch and the rollout wait (goal: p50
// within 5 % of BenchmarkWebhookToPatch's). spans/op says what was exported.
func BenchmarkWebhookToPatchTraced(b *testing.B) {
	benchmarkLatency(b, latencyBench{interval: time.Hour, webhook: true, traced: true})
}

// BenchmarkWebhookToPatchEnvironment is BenchmarkWebhookToPatch with the
// Environment resource written as `reconciler run` writes it: after each
// pass and decision, and as the phase moves (Applying before the first
// patch, from a goroutine of its own).
func BenchmarkWebhookToPatchEnvironment(b *testing.B) {
	benchmarkLatency(b, latencyBench{interval: time.Hour, webhook: true, environment: true})
}

// BenchmarkPollOnly measures the same without a webhook, with a 1s poll
// interval (target: within interval + 1s).
func BenchmarkPollOnly(b *testing.B) {
	benchmarkLatency(b, latencyBench{interval: time.Second})
}

// latencyBench is what a latency benchmark runs: the source's poll
// interval, whether a push webhook wakes it, whether the Environment
// resource is written, whether the daemon and its API are traced.
type latencyBench struct {
	interval                     time.Duration
	webhook, environment, traced bool
}

func benchmarkLatency(b *testing.B, lb latencyBench) {
	interval, webhook, environment := lb.interval, lb.webhook, lb.environment
	h := newHarness(b, "devel")
	h.cfg.Source.Interval = config.Duration{Duration: interval}
	var opts []Option
	var e *envRes
	if environment {
		e = newEnvRes(b, h)
		opts = append(opts, e.option())
	}
	var wopts []wire.Option
	var tp *tracing.Provider
	var recv *tracingtest.Receiver
	if lb.traced {
		recv = tracingtest.Start(b)
		tp = tracedTo(b, recv)
		h.apiOpts = []api.Option{api.WithTracing(tp)}
		wopts = append(wopts, wire.WithTracingProvider(tp))
	}
	r := h.startWith(wopts, opts...)
	if e != nil {
		e.d.Store(r.d)
	}
	waitImage(b, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(b, 30*time.Second, "first apply recorded", func() bool { return len(r.storeHistory(b, "devel")) == 1 })
	var lat []time.Duration
	before := stepSeconds(b, r, "devel")
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf("%sweb:2.0.%d", imageRepo, i)
		b.StopTimer()
		rev := h.commit("devel", true, map[string]string{"web": fmt.Sprintf("2.0.%d", i)})
		b.StartTimer()
		// From the push (the webhook, or the commit the poll finds) on: the
		// commit itself is the test git server's work, not Stagehand's.
		start := time.Now()
		if webhook {
			r.push(b, h, fmt.Sprintf("bench-%d", i))
		}
		deadline := start.Add(30 * time.Second)
		for cluster.Env(b).Image(b, h.ns["devel"], "web") != want {
			if time.Now().After(deadline) {
				b.Fatalf("iteration %d: %s not patched within 30s", i, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		// Let the apply finish (rollout, history) before the next commit:
		// by its revision, since the history keeps only the newest 100.
		b.StopTimer()
		r.waitRecorded(b, "devel", rev)
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, lat, 0.9)
	if tp != nil {
		r.stop()
		b.ReportMetric(float64(len(flushSpans(b, tp, recv)))/float64(b.N), "spans/op")
	}
	// Where the time goes: each step's time per commit, over every pass
	// the commits caused (the apply step runs on past the patch: it waits
	// for the rollout, and record writes the history after it).
	after := stepSeconds(b, r, "devel")
	for _, s := range pass.StepNames {
		b.ReportMetric((after[s]-before[s])*1000/float64(b.N), string(s)+"-ms/op")
	}
}

// stepSeconds is the time env's passes spent in each step so far
// (stagehand_step_duration_seconds' sums).
func stepSeconds(t testing.TB, r *running, env string) map[pass.StepName]float64 {
	t.Helper()
	mfs, err := r.d.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[pass.StepName]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "stagehand_step_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var e, s string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "environment":
					e = l.GetValue()
				case "step":
					s = l.GetValue()
				}
			}
			if e == env {
				out[pass.StepName(s)] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// BenchmarkApprovalClickToPatch measures an approval over the real API
// server: with a plan pending in prod, POST /api/v1/environments/prod/approve
// until the first (only) workload is seen patched through a watch. Making the
// next pending plan (commit, push webhook, plan) is not timed.
func BenchmarkApprovalClickToPatch(b *testing.B) {
	env := cluster.Env(b)
	h := newHarness(b, "prod")
	r := h.start()
	ctx := context.Background()
	rev := h.git.Head(b, "manifests", "main")
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if i > 0 {
			rev = h.commit("prod", false, map[string]string{"web": fmt.Sprintf("2.0.%d", i)})
			r.push(b, h, fmt.Sprintf("click-bench-%d", i))
		}
		p := r.waitPending(b, "prod", rev)
		want := imageRepo + "web:1.0.0"
		if i > 0 {
			want = fmt.Sprintf("%sweb:2.0.%d", imageRepo, i)
		}
		dep, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		watch, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Watch(wctx, metav1.ListOptions{
			FieldSelector: "metadata.name=web", ResourceVersion: dep.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if code, body := r.call(b, "POST", "/api/v1/environments/prod/approve", tokenOf("bench"),
			api.DecisionRequest{PlanHash: p.PlanHash}); code != http.StatusAccepted {
			b.Fatalf("iteration %d: approve = %d %s", i, code, body)
		}
		patched := false
		for ev := range watch.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Spec.Template.Spec.Containers[0].Image == want {
				patched = true
				break
			}
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		watch.Stop()
		cancel()
		if !patched {
			b.Fatalf("iteration %d: %s not patched within 30s", i, want)
		}
		// Let the apply finish (rollout, history) before the next plan.
		r.waitRecorded(b, "prod", rev) // by its revision: the history keeps only the newest 100
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, lat, 0.9)
}

// waitRecorded waits until the newest entry of name's history is rev's
// apply. (The history's length stops growing at its limit, 100 entries,
// which a benchmark run with -count passes.)
func (r *running) waitRecorded(t testing.TB, name, rev string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "apply of "+approval.ShortRevision(rev)+" recorded", func() bool {
		h := r.storeHistory(t, name)
		return len(h) > 0 && h[0].Revision == rev
	})
}

// storeHistory reads name's history from the Store: the benchmarks' waits
// for an apply to be recorded poll tightly, and through the API they ran
// into its per-token rate limit (429) once the applies got faster.
func (r *running) storeHistory(t testing.TB, name string) []approval.Entry {
	t.Helper()
	h, err := r.d.History(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// finishGate notes when each revision's deploy finished: the worker tells
// the gate's Completed right after it recorded the history entry.
type finishGate struct {
	approval.Gate
	mu       sync.Mutex
	finished map[string]time.Time
}

func (g *finishGate) Completed(ctx context.Context, p approval.Proposal, o approval.Outcome) error {
	if o.Result == approval.ResultSucceeded {
		g.mu.Lock()
		g.finished[p.Revision] = time.Now()
		g.mu.Unlock()
	}
	return g.Gate.Completed(ctx, p, o)
}

func (g *finishGate) at(rev string) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.finished[rev]
	return t, ok
}

// BenchmarkDeployedVisible measures the time from a deploy finishing (its
// history recorded and the gate told) to a watcher of the Environment
// seeing its Deployed condition True at that revision, with the Environment
// written as `reconciler run` writes it (goal p50 < 200 ms).
func BenchmarkDeployedVisible(b *testing.B) {
	h := newHarness(b, "devel")
	e := newEnvRes(b, h)
	gate := &finishGate{Gate: approval.Manual(), finished: map[string]time.Time{}}
	r := h.start(e.option(), WithGate(gate))
	e.d.Store(r.d)
	waitImage(b, h.ns["devel"], "web", imageRepo+"web:1.0.0")

	// The watcher: when each revision was first seen Deployed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wi, err := dynamic.NewForConfigOrDie(cluster.Env(b).Config).Resource(envresource.GVR).Namespace(h.stateNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer wi.Stop()
	var mu sync.Mutex
	seen := map[string]time.Time{}
	go func() {
		for ev := range wi.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || o.GetName() != "devel" {
				continue
			}
			if c := condition(o, envresource.ConditionDeployed); c != nil && c.Status == metav1.ConditionTrue {
				rev, _, _ := unstructured.NestedString(o.Object, "status", "observedRevision")
				mu.Lock()
				if _, ok := seen[rev]; !ok {
					seen[rev] = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	seenAt := func(rev string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		t, ok := seen[rev]
		return t, ok
	}
	testenv.WaitFor(b, 30*time.Second, "the first deploy visible", func() bool {
		_, ok := seenAt(h.git.Head(b, "manifests", "main"))
		return ok
	})
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		rev := h.commit("devel", true, map[string]string{"web": fmt.Sprintf("3.0.%d", i)})
		r.push(b, h, fmt.Sprintf("visible-%d", i))
		var done, visible time.Time
		testenv.WaitFor(b, 60*time.Second, "deploy of "+approval.ShortRevision(rev)+" visible", func() bool {
			var ok1, ok2 bool
			done, ok1 = gate.at(rev)
			visible, ok2 = seenAt(rev)
			return ok1 && ok2
		})
		lat = append(lat, max(visible.Sub(done), 0))
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, lat, 0.9)
}

// reportLatency reports the latencies' median, their q-quantile (p90-ms
// for 0.9) and the largest, in milliseconds.
func reportLatency(b *testing.B, lat []time.Duration, q float64) {
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(q), fmt.Sprintf("p%d-ms", int(q*100+0.5)))
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
