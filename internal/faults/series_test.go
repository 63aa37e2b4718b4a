package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// The figure of #29: the series one replica serves at 20 environments of 500
// services each (goal: fewer than 5,000).
const (
	figureEnvs     = 20
	figureServices = 500
	seriesGoal     = 5000
)

// TestSeriesAt20x500 builds 20 environments of 500 services each (10,000
// Deployments, a namespace per environment), has the real reconciler (a
// Lease per environment) deploy a bump of every service in every environment
// and verify it with an http check, and counts the series of a scrape of its
// /metrics: Stagehand's own must stay under 5,000, whatever the number of
// services (no metric has a service label). It builds 10,000 Deployments, so
// it runs only with STAGEHAND_FIGURES=1 (go test -run TestSeriesAt20x500
// ./internal/faults); it logs the count of each metric.
func TestSeriesAt20x500(t *testing.T) {
	if os.Getenv("STAGEHAND_FIGURES") == "" {
		t.Skip("measures the series at 20 environments × 500 services (10,000 Deployments): set STAGEHAND_FIGURES=1")
	}
	ctx := t.Context()
	shop := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	var pipeline strings.Builder
	pipeline.WriteString("stages:\n")
	files := func(version string) map[string]string {
		m := map[string]string{}
		for e := range figureEnvs {
			m["environments/"+figureEnv(e)+"/manifest.json"] = manifest(figureServices, version)["environments/devel/manifest.json"]
		}
		m["pipeline.yaml"] = pipeline.String()
		return m
	}
	for e := range figureEnvs {
		fmt.Fprintf(&pipeline, "  - name: %s\n    sequence: [deployment, {name: test, properties: {http: {url: \"http://%s/\", interval: 200ms, duration: 400ms}}}, release]\n",
			figureEnv(e), shop)
	}
	f := newFixture(t, files("1.0.0"))
	envs := map[string]any{}
	for e := range figureEnvs {
		ns := f.env.Namespace(t)
		envs[figureEnv(e)] = map[string]any{"lockPath": "apps/" + figureEnv(e), "targets": []any{map[string]any{"name": "a", "namespace": ns}}}
		createDeployments(t, f.env, ns, figureServices)
	}
	f.config["environments"] = envs
	f.config["leaderElection"] = map[string]any{"perEnvironment": true}
	f.config["verification"] = map[string]any{"allowAddresses": []any{"127.0.0.1/32"}}
	f.config["workloads"] = map[string]any{"rolloutTimeout": "5m", "concurrency": 16}
	a := f.start(t, "replica-a", nil)
	rev := f.git.Repo("manifests").Commit(t, "main", files("2.0.0"), "every service to 2.0.0")
	start := time.Now()
	testenv.WaitFor(t, 20*time.Minute, "every environment's deploy of "+rev[:8]+" recorded", func() bool {
		for e := range figureEnvs {
			var h struct {
				History []entry `json:"history"`
			}
			if a.get(ctx, f.token, "/api/v1/environments/"+figureEnv(e)+"/history", &h) != http.StatusOK ||
				len(h.History) == 0 || h.History[0].Revision != rev {
				return false
			}
		}
		return true
	})
	t.Logf("20 × 500 deployed in %s", time.Since(start).Round(time.Second))
	counts, err := scrapeSeries(ctx, a.addr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	own, all := 0, 0
	for name, n := range counts {
		names = append(names, name)
		all += n
		if strings.HasPrefix(name, "stagehand_") {
			own += n
		}
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "\n  %6d %s", counts[name], name)
	}
	t.Logf("series of one scrape at %d environments × %d services: %d Stagehand's, %d in all (with go_ and process_):%s",
		figureEnvs, figureServices, own, all, b.String())
	if own >= seriesGoal {
		t.Errorf("%d Stagehand series at %d × %d, want fewer than %d", own, figureEnvs, figureServices, seriesGoal)
	}
	_, samples, err := scrape(ctx, a.addr)
	if err != nil {
		t.Fatal(err)
	}
	queryCost(t, samples, 6*time.Hour, 30*time.Second)
}

// queryCost measures what the dashboard's queries cost on these series: it
// backfills span of them scraped every interval (promtool tsdb
// create-blocks-from openmetrics; a counter's and a histogram's values grow
// in proportion to time from zero to what was scraped, a gauge's stay), has a
// real Prometheus serve the blocks, and runs every panel's query as Grafana
// does over span: a graph's over the range, a point every interval,
// $__rate_interval four intervals; a stat's (the DORA figures) at its end
// over $__range. Prometheus' own statistics (stats=all) say what each read.
func queryCost(t *testing.T, samples []sample, span, interval time.Duration) {
	t.Helper()
	promtool, err := promtest.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	input := filepath.Join(dir, "series.om")
	out, err := os.Create(input)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	sort.Slice(samples, func(i, j int) bool { return samples[i].series < samples[j].series })
	end := time.Now().Truncate(interval).Add(-interval)
	steps := int(span / interval)
	for _, s := range samples {
		for k := 0; k <= steps; k++ {
			v := s.value
			if s.counter {
				v = s.value * float64(k) / float64(steps)
			}
			at := end.Add(-time.Duration(steps-k) * interval)
			fmt.Fprintf(w, "%s %g %d\n", s.series, v, at.Unix())
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if b, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", input, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, tail(string(b), 4000))
	}
	_ = os.Remove(input)
	prom := promtest.StartWith(t, promtest.Config{Storage: data})
	vars := strings.NewReplacer(`$__rate_interval`, (4 * interval).String(), `$__range_s`, strconv.Itoa(int(span.Seconds())),
		`$__range`, span.String(), `=~"$environment"`, `=~".*"`)
	var b strings.Builder
	var total promtest.Stats
	fmt.Fprintf(&b, "\n| panel | query | kind | series | samples read | peak samples | seconds |\n|---|---|---|---|---|---|---|")
	for _, q := range dashboardPanels(t) {
		expr := vars.Replace(q.expr)
		var n int
		var st promtest.Stats
		kind := "range"
		if q.stat {
			kind = "instant"
			var series []promtest.Series
			series, st, err = prom.QueryStats(t.Context(), expr, end)
			n = len(series)
		} else {
			n, st, err = prom.QueryRangeStats(t.Context(), expr, promtest.Range{Start: end.Add(-span), End: end, Step: interval})
		}
		if err != nil {
			t.Errorf("panel %q: %v", q.panel, err)
			continue
		}
		total.TotalQueryableSamples += st.TotalQueryableSamples
		total.PeakSamples = max(total.PeakSamples, st.PeakSamples)
		total.ExecTotalTime += st.ExecTotalTime
		fmt.Fprintf(&b, "\n| %s | `%s` | %s | %d | %d | %d | %.3f |", q.panel, q.expr, kind, n, st.TotalQueryableSamples, st.PeakSamples, st.ExecTotalTime)
	}
	t.Logf("the dashboard's queries over %s of %d series scraped every %s: %d samples read, peak %d samples, %.3f s of query time in all:%s",
		span, len(samples), interval, total.TotalQueryableSamples, total.PeakSamples, total.ExecTotalTime, b.String())
}

func figureEnv(i int) string { return fmt.Sprintf("env-%02d", i) }

// createDeployments creates n Deployments of zero replicas (only the pod
// template is planned and patched) running 1.0.0 in ns, eight at a time.
func createDeployments(t *testing.T, env *testenv.Env, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d := testenv.Deployment(svc(i), image(i, "1.0.0"))
			d.Spec.Replicas = new(int32)
			if _, err := env.Clientset.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating deployments in %s: %v", ns, err)
	}
}

// scrapeSeries reads addr's /metrics and counts the series of each metric
// family (a histogram's _bucket, _sum and _count lines under its name).
func scrapeSeries(ctx context.Context, addr string) (map[string]int, error) {
	counts, _, err := scrape(ctx, addr)
	return counts, err
}

// sample is one line of a scrape: a series and its value.
type sample struct {
	series  string // name{labels}
	value   float64
	counter bool // of a counter or a histogram: it only grows
}

// scrape reads addr's /metrics: the series of each family, and every sample.
func scrape(ctx context.Context, addr string) (map[string]int, []sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	families, counts := map[string]string{}, map[string]int{}
	var samples []sample
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			fs := strings.Fields(line)
			if len(fs) >= 4 {
				families[fs[2]] = fs[3]
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		fam := name
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, s); base != name && families[base] != "" {
				fam = base
			}
		}
		counts[fam]++
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("scraping %s: %q: %w", addr, line, err)
		}
		t := families[fam]
		samples = append(samples, sample{series: line[:i], value: v, counter: t == "counter" || t == "histogram" || t == "summary"})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(counts) == 0 {
		return nil, nil, fmt.Errorf("scraping %s: no series", addr)
	}
	return counts, samples, nil
}
