package verify

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseTask(t *testing.T) {
	for _, tc := range []struct {
		name, props string
		want        Task
	}{
		{"job", `{"job": {"image": "acme/smoke:1", "args": ["--fast"], "env": {"BASE": "http://web"}}}`,
			Task{Name: "job", Kind: KindJob, Timeout: DefaultTimeout, Job: &Job{Image: "acme/smoke:1", Args: []string{"--fast"}, Env: map[string]string{"BASE": "http://web"}}}},
		{"http defaults", `{"kind": "http", "timeout": "3m", "http": {"url": "https://shop.example.com/healthz"}}`,
			Task{Name: "http defaults", Kind: KindHTTP, Timeout: 3 * time.Minute, HTTP: &HTTP{URL: "https://shop.example.com/healthz", Method: "GET",
				ExpectStatus: 200, Interval: 10 * time.Second, Duration: time.Minute}}},
		{"http ratios", `{"http": {"url": "http://web/", "method": "HEAD", "expectStatus": 204, "bodyRegexp": "ok", "interval": "1s", "duration": "20s", "failureRatio": 0.2}}`,
			Task{Name: "http ratios", Kind: KindHTTP, Timeout: DefaultTimeout, HTTP: &HTTP{URL: "http://web/", Method: "HEAD", ExpectStatus: 204, BodyRegexp: "ok",
				Interval: time.Second, Duration: 20 * time.Second, FailureRatio: 0.2}}},
		{"long check", `{"http": {"url": "http://web/", "duration": "10m"}}`,
			Task{Name: "long check", Kind: KindHTTP, Timeout: 11 * time.Minute, HTTP: &HTTP{URL: "http://web/", Method: "GET", ExpectStatus: 200,
				Interval: 10 * time.Second, Duration: 10 * time.Minute}}},
		{"prometheus", `{"prometheus": {"address": "http://prometheus:9090", "query": "sum(rate(errors[1m]))", "op": "<", "threshold": 0.05, "warningRatio": 0.1, "failureRatio": 0.3}}`,
			Task{Name: "prometheus", Kind: KindPrometheus, Timeout: DefaultTimeout, Prometheus: &Prometheus{Address: "http://prometheus:9090", Query: "sum(rate(errors[1m]))",
				Op: "<", Threshold: 0.05, Interval: 30 * time.Second, Duration: 2 * time.Minute, WarningRatio: 0.1, FailureRatio: 0.3}}},
		{"analysis", `{"timeout": "10m", "analysis": {"template": "error-rate", "args": {"service": "api"}, "target": "eu"}}`,
			Task{Name: "analysis", Kind: KindAnalysis, Timeout: 10 * time.Minute, Analysis: &Analysis{Template: "error-rate", Args: map[string]string{"service": "api"}, Target: "eu"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTask(tc.name, []byte(tc.props))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(HTTP{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTaskErrors(t *testing.T) {
	for _, tc := range []struct {
		name, props string
		want        []string // each in the error
	}{
		{"nothing", `{}`, []string{`task "nothing": kind: set one of job, http, prometheus and analysis`}},
		{"two kinds", `{"job": {"image": "x"}, "http": {"url": "http://x"}}`, []string{"kind: set exactly one of job, http, prometheus and analysis, got job and http"}},
		{"unknown kind", `{"kind": "dns"}`, []string{`kind: want job, http, prometheus or analysis, got "dns"`}},
		{"analysis without template", `{"analysis": {}}`, []string{"analysis.template: required"}},
		{"analysis bad template", `{"analysis": {"template": "Not A Name"}}`, []string{`analysis.template: want the name of an AnalysisTemplate, got "Not A Name"`}},
		{"analysis reserved arg", `{"analysis": {"template": "t", "args": {"stagehand-revision": "x"}}}`, []string{"analysis.args.stagehand-revision: the stagehand- prefix is reserved"}},
		{"analysis unknown key", `{"analysis": {"template": "t", "metrics": []}}`, []string{`unknown field "metrics"`}},
		{"kind without settings", `{"kind": "http"}`, []string{"http: required with kind http"}},
		{"kind mismatch", `{"kind": "job", "http": {"url": "http://x"}}`, []string{`kind: is "job", but the settings are under http`}},
		{"unknown key", `{"http": {"url": "http://x", "expect": 200}}`, []string{`unknown field "expect"`}},
		{"job image", `{"job": {"args": ["x"], "env": {"STAGEHAND_REVISION": "x"}}}`, []string{"job.image: required", "job.env.STAGEHAND_REVISION: the STAGEHAND_ prefix is reserved"}},
		{"job image with a space", `{"job": {"image": "acme/smoke:1 "}}`, []string{`job.image: want an image reference such as ghcr.io/acme/smoke-tests:1.4.0, got "acme/smoke:1 "`}},
		{"job image of upper case", `{"job": {"image": "Acme/Smoke:1"}}`, []string{`job.image: want an image reference such as ghcr.io/acme/smoke-tests:1.4.0, got "Acme/Smoke:1"`}},
		{"http values", `{"timeout": "30s", "http": {"url": "ftp://x", "method": "get", "expectStatus": 99, "bodyRegexp": "(", "interval": "-1s", "duration": "1m", "warningRatio": 0.5, "failureRatio": 1}}`,
			[]string{`http.url: want an absolute http(s) URL, got "ftp://x"`, `http.method: want an HTTP method such as GET, got "get"`,
				"http.expectStatus: want an HTTP status from 100 to 599, got 99", `http.bodyRegexp: not a regular expression`,
				`http.interval: want a positive duration such as 30s or 5m, got "-1s"`, "http.failureRatio: want a number from 0 to below 1, got 1",
				"http.duration: 1m0s must be shorter than the timeout 30s"}},
		{"warning above failure", `{"http": {"url": "http://x", "warningRatio": 0.5, "failureRatio": 0.2}}`, []string{"http.warningRatio: want a number from 0 to failureRatio (0.2), got 0.5"}},
		{"prometheus values", `{"timeout": "soon", "prometheus": {"address": "prometheus:9090", "query": " ", "op": "=<"}}`,
			[]string{`timeout: want a positive duration such as 30s or 5m, got "soon"`, `prometheus.address: want the Prometheus server's absolute http(s) URL, got "prometheus:9090"`,
				"prometheus.query: required", `prometheus.op: want one of <, <=, >, >=, ==, !=, got "=<"`, "prometheus.threshold: required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTask(tc.name, []byte(tc.props))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

func TestKinds(t *testing.T) {
	for props, want := range map[string]bool{
		`{"http": {}}`: true, `{"kind": "job"}`: true, `{"prometheus": 1}`: true,
		`{"teststrategy": "functional"}`: false, `[]`: false, ``: false,
	} {
		if got := Kinds([]byte(props)); got != want {
			t.Errorf("Kinds(%s) = %v, want %v", props, got, want)
		}
	}
}

func TestJobName(t *testing.T) {
	for _, tc := range []struct{ task, rev string }{
		{"smoke", "0123456789abcdef0123456789abcdef01234567"},
		{"A_Very.Long task name that goes on and on and on", "main"},
		{"x", ""},
	} {
		n := jobName(tc.task, tc.rev)
		if len(n) > 63 || strings.ContainsAny(n, "_. ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.HasPrefix(n, "stagehand-verify-") {
			t.Errorf("jobName(%q, %q) = %q: not a valid Job name", tc.task, tc.rev, n)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		failed, total int
		warning, fail float64
		want          string
	}{
		{0, 10, 0, 0, Pass}, {1, 10, 0, 0, Fail}, {1, 10, 0, 0.2, Warning}, {2, 10, 0, 0.2, Warning},
		{3, 10, 0, 0.2, Fail}, {1, 10, 0.1, 0.2, Pass}, {0, 0, 0, 0.5, Fail},
	} {
		if got := judge(count{tc.failed, tc.total, "requests"}, tc.warning, tc.fail); got.result != tc.want {
			t.Errorf("judge(%d/%d, warn %v, fail %v) = %v, want %s", tc.failed, tc.total, tc.warning, tc.fail, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	got := strings.Join(Keys(), " ")
	for _, k := range []string{"kind", "timeout", "job.image", "job.env.<name>", "job.annotations.<name>", "http.headers.<name>",
		"http.failureRatio", "prometheus.threshold", "prometheus.op"} {
		if !strings.Contains(" "+got+" ", " "+k+" ") {
			t.Errorf("Keys() = %s: no %s", got, k)
		}
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	got := truncate(long, maxMessage)
	if len(got) > maxMessage+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("truncate: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if truncate("short", maxMessage) != "short" {
		t.Error("a short message changed")
	}
}
