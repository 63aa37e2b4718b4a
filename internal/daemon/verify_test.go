package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// verifyWorld is what the verification tasks of a test check: a storefront
// whose health endpoint can be broken, and an error ratio Prometheus scrapes.
type verifyWorld struct {
	healthy  atomic.Bool
	shop     string
	errRatio prometheus.Gauge
	prom     *promtest.Server
}

func newVerifyWorld(t *testing.T) *verifyWorld {
	t.Helper()
	w := &verifyWorld{}
	w.healthy.Store(true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w.errRatio = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shop_error_ratio", Help: "Errors per request."})
	reg.MustRegister(w.errRatio)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, r *http.Request) {
		if !w.healthy.Load() {
			http.Error(rw, `{"status":"degraded"}`, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(rw, `{"status":"ok"}`)
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	w.shop = "http://" + l.Addr().String()
	w.prom = promtest.Start(t, l.Addr().String())
	w.prom.WaitFor(t, "shop_error_ratio")
	return w
}

// pipeline is a pipeline.yaml whose devel stage runs a Job, an http check
// and a Prometheus evaluation after its deployment.
func (w *verifyWorld) pipeline() string {
	return `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties:
          timeout: 1m
          job: {image: acme/smoke:1, args: [--suite, web]}
      - name: test
        properties:
          http: {url: "` + w.shop + `/healthz", bodyRegexp: '"status":"ok"', interval: 500ms, duration: 1500ms} # each request may take the interval: roomy for a loaded machine
      - name: evaluation
        properties:
          prometheus: {address: "` + w.prom.URL + `", query: shop_error_ratio, op: "<", threshold: 0.05, interval: 400ms, duration: 1200ms}
      - release
`
}

// TestVerificationAfterRollout: on the real API server, a deploy whose Job,
// http check and Prometheus evaluation pass succeeds with each result
// recorded; a broken health endpoint, and then an error ratio above its
// threshold, each fail the deploy (history, the gate's outcome, the
// sequence state) with the check's reason.
func TestVerificationAfterRollout(t *testing.T) {
	w := newVerifyWorld(t)
	w.errRatio.Set(0.01)
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": w.pipeline()}, "verify devel")
	v, err := verify.New(append(loopbackVerification(t), verify.WithJobPoll(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	gate := &recordingGate{}
	r := h.start(WithVerifier(v), WithGate(gate))

	var hist []approval.Entry
	history := func() []approval.Entry {
		st, err := r.d.store.Load(context.Background(), "devel")
		if err != nil {
			t.Fatal(err)
		}
		return st.History
	}
	testenv.WaitFor(t, 60*time.Second, "the first deploy recorded", func() bool { hist = history(); return len(hist) == 1 })
	if hist[0].Result != approval.ResultSucceeded {
		t.Fatalf("first deploy %s: %s", hist[0].Result, hist[0].Message)
	}
	checkVerifications(t, "first deploy", hist[0], "job pass", "http pass", "prometheus pass")
	seq := r.environment(t, "devel").Sequence
	if seq == nil || seq.Revision != hist[0].Revision || seq.Result != "pass" || len(seq.Tasks) != 5 {
		t.Fatalf("the status' sequence after a pass: %+v", seq)
	}
	var out delivery.VerifyOutputs
	if err := json.Unmarshal(seq.Tasks[3].Outputs, &out); err != nil || out.Verification.Kind != "prometheus" || out.Verification.Result != "pass" ||
		!strings.Contains(out.Verification.Message, "shop_error_ratio") {
		t.Errorf("the status' evaluation task outputs %s (%v): want the prometheus check's pass", seq.Tasks[3].Outputs, err)
	}
	jobs, err := cluster.Env(t).Clientset.BatchV1().Jobs(h.ns["devel"]).List(context.Background(), metav1.ListOptions{LabelSelector: verify.LabelEnvironment + "=devel"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == nil {
			t.Errorf("verification Job %s left behind", j.Name)
		}
	}
	for _, kind := range []struct{ task, kind string }{{"test", "job"}, {"test", "http"}, {"evaluation", "prometheus"}} {
		if n := metricValue(t, r.d.metrics, "stagehand_verifications_total", "environment=devel", "task="+kind.task, "kind="+kind.kind, "result=pass"); n != 1 {
			t.Errorf("stagehand_verifications_total{devel,%s,%s,pass} = %v, want 1", kind.task, kind.kind, n)
		}
	}

	w.healthy.Store(false)
	rev := h.commit("devel", true, map[string]string{"web": "1.1.0"})
	r.push(t, h, "delivery-1")
	testenv.WaitFor(t, 60*time.Second, "the second deploy recorded", func() bool { hist = history(); return len(hist) == 2 })
	if e := hist[0]; e.Revision != rev || e.Result != approval.ResultFailed || !strings.Contains(e.Message, "status 503, want 200") {
		t.Errorf("deploy with a broken health endpoint: %s %s: %s; want failed saying status 503", approval.ShortRevision(e.Revision), e.Result, e.Message)
	}
	checkVerifications(t, "broken health endpoint", hist[0], "job pass", "http fail")

	w.healthy.Store(true)
	w.errRatio.Set(0.2)
	rev = h.commit("devel", true, map[string]string{"web": "1.2.0"})
	r.push(t, h, "delivery-2")
	testenv.WaitFor(t, 60*time.Second, "the third deploy recorded", func() bool { hist = history(); return len(hist) == 3 })
	if e := hist[0]; e.Revision != rev || e.Result != approval.ResultFailed || !strings.Contains(e.Message, "= 0.2, want < 0.05") {
		t.Errorf("deploy breaching the error ratio: %s %s: %s; want failed quoting the value", approval.ShortRevision(e.Revision), e.Result, e.Message)
	}
	checkVerifications(t, "error ratio breached", hist[0], "job pass", "http pass", "prometheus fail")
	if n := metricValue(t, r.d.metrics, "stagehand_verifications_total", "environment=devel", "task=evaluation", "kind=prometheus", "result=fail"); n != 1 {
		t.Errorf("stagehand_verifications_total{devel,evaluation,prometheus,fail} = %v, want 1", n)
	}
	// The history is recorded before the gate hears the outcome: wait for it.
	var got string
	testenv.WaitFor(t, 30*time.Second, "the gate to hear three outcomes", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		var results []string
		for _, o := range gate.completed {
			results = append(results, o.Result)
		}
		got = strings.Join(results, ",")
		return len(results) >= 3
	})
	if got != "succeeded,failed,failed" {
		t.Errorf("the gate heard %s, want succeeded,failed,failed", got)
	}
}

// checkVerifications: the history entry holds the verification results,
// "kind result" in order.
func checkVerifications(t *testing.T, what string, e approval.Entry, want ...string) {
	t.Helper()
	var got []string
	for _, v := range e.Verification {
		got = append(got, v.Kind+" "+v.Result)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: verification results in the history (-want +got):\n%s", what, diff)
	}
}

// TestVerificationPropertiesCheckedBeforeApply: a verification task whose
// properties are wrong stops the environment when it is planned, naming the
// file, the task and the key; nothing is applied.
func TestVerificationPropertiesCheckedBeforeApply(t *testing.T) {
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties:
          http: {url: "shop.example.com/healthz"}
`}, "a verification without a scheme")
	v, err := verify.New()
	if err != nil {
		t.Fatal(err)
	}
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()))}, WithVerifier(v))
	if err != nil {
		t.Fatal(err)
	}
	err = d.Once(context.Background())
	want := `pipeline.yaml:5:9: stages[0].sequence[1].properties: verification task "test": http.url: want an absolute http(s) URL, got "shop.example.com/healthz"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Once: %v\nwant an error saying %s", err, want)
	}
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("devel runs %s; want web:0.9.0, nothing applied", got)
	}
}

// TestFailedVerificationRollsBack: with onFailedRollout: rollback, a deploy
// whose rollout succeeded but whose http check fails, or whose Prometheus
// evaluation breaches its threshold, is rolled back: the workload runs its
// previous image again, the history entry says rolled-back with the
// verification's cause and results, and the gate hears it rolled back (the
// check run a failure, which holds promotion).
func TestFailedVerificationRollsBack(t *testing.T) {
	w := newVerifyWorld(t)
	for _, tc := range []struct {
		name, task, breach string
		kind               string
		breaks             func(*testing.T)
		mends              func()
	}{
		{"http", `http: {url: "` + w.shop + `/healthz", interval: 50ms, duration: 200ms}`, "status 503, want 200", "http",
			func(*testing.T) { w.healthy.Store(false) }, func() { w.healthy.Store(true) }},
		{"prometheus", `prometheus: {address: "` + w.prom.URL + `", query: shop_error_ratio, op: "<", threshold: 0.05, interval: 400ms, duration: 1200ms}`,
			"= 0.3, want < 0.05", "prometheus",
			func(t *testing.T) { w.errRatio.Set(0.3); w.prom.WaitFor(t, "shop_error_ratio == 0.3") }, func() { w.errRatio.Set(0.01) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.errRatio.Set(0.01)
			w.prom.WaitFor(t, "shop_error_ratio == 0.01")
			failedVerificationRollsBack(t, w, tc.task, tc.breach, tc.kind, tc.breaks)
			tc.mends()
		})
	}
}

func failedVerificationRollsBack(t *testing.T, w *verifyWorld, task, breach, kind string, breaks func(*testing.T)) {
	t.Helper()
	h := newHarness(t, "devel")
	ec := h.cfg.Environments["devel"]
	ec.OnFailedRollout = config.OnFailedRolloutRollback
	h.cfg.Environments["devel"] = ec
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties:
          ` + task + `
`}, "verify devel")
	v, err := verify.New(loopbackVerification(t)...)
	if err != nil {
		t.Fatal(err)
	}
	gate := &recordingGate{}
	r := h.start(WithVerifier(v), WithGate(gate))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	history := func() []approval.Entry {
		st, err := r.d.store.Load(context.Background(), "devel")
		if err != nil {
			t.Fatal(err)
		}
		return st.History
	}
	testenv.WaitFor(t, 30*time.Second, "the first deploy recorded", func() bool { hist = history(); return len(hist) == 1 })

	breaks(t)
	rev := h.commit("devel", true, map[string]string{"web": "1.1.0"})
	r.push(t, h, "delivery-1")
	testenv.WaitFor(t, 60*time.Second, "the failed deploy recorded", func() bool { hist = history(); return len(hist) == 2 })
	e := hist[0]
	if e.Revision != rev || e.Result != approval.ResultRolledBack || !strings.Contains(e.Message, "verification failed") ||
		!strings.Contains(e.Message, breach) {
		t.Errorf("history: %s %s: %s; want rolled-back for the failed verification (%q)", approval.ShortRevision(e.Revision), e.Result, e.Message, breach)
	}
	checkVerifications(t, "rolled back", e, kind+" fail")
	if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
		t.Errorf("devel runs %s after the rollback, want web:1.0.0 again", got)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if n := len(gate.completed); n != 2 || gate.completed[1].Result != approval.ResultRolledBack {
		t.Errorf("the gate heard %+v; want the second deploy rolled back (its check run a failure: promotion blocked)", gate.completed)
	}
}

// loopbackVerification opens this host's loopback address to verification
// requests, where the tests serve the shop and Prometheus, as
// reconciler.yaml's verification.allowAddresses does for a user's
// in-cluster service (refused by default).
func loopbackVerification(t *testing.T) []verify.Option {
	t.Helper()
	opts, err := wire.VerifyOptions(config.Verification{AllowAddresses: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	return opts
}
