package verify_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// exporter serves a registry's metrics on a loopback listener it keeps, and
// returns its host:port.
func exporter(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// TestPrometheus evaluates PromQL checks with a real Prometheus scraping an
// exporter served here: an error rate under its threshold passes, a breach
// fails with the value, a query with no series and a NaN fail saying so.
func TestPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	errorRate := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shop_error_ratio", Help: "Errors per request."}, []string{"service"})
	reg.MustRegister(errorRate)
	errorRate.WithLabelValues("checkout").Set(0.01)
	errorRate.WithLabelValues("cart").Set(0.2)
	prom := promtest.Start(t, exporter(t, reg))
	prom.WaitFor(t, `shop_error_ratio{service="cart"}`)

	check := func(query, op, threshold string) string {
		return `{"prometheus": {"address": "` + prom.URL + `", "query": "` + query + `", "op": "` + op + `", "threshold": ` + threshold +
			`, "interval": "100ms", "duration": "300ms"}}`
	}
	for _, tc := range []struct {
		name, props, result string
		message             []string
	}{
		{"under threshold", check(`shop_error_ratio{service=\"checkout\"}`, "<", "0.05"), verify.Pass,
			[]string{`evaluations of "shop_error_ratio{service=\"checkout\"}" failed (0%)`, `last value {__name__="shop_error_ratio",instance=`, `service="checkout"} 0.01`}},
		{"breach", check(`shop_error_ratio{service=\"cart\"}`, "<", "0.05"), verify.Fail,
			[]string{"failed (100%), above the failure ratio 0%", `service="cart"} = 0.2, want < 0.05`}},
		{"every series", check(`shop_error_ratio`, "<=", "0.1"), verify.Fail, []string{`service="cart"} = 0.2, want <= 0.1`}},
		{"many series", check(`label_replace(shop_error_ratio, \"copy\", \"$1\", \"service\", \"(.*)\") or shop_error_ratio * 2`, "<", "1"), verify.Pass,
			[]string{"and 1 more series"}},
		{"aggregate", check(`max(shop_error_ratio)`, ">=", "0.2"), verify.Pass, []string{"last value {} 0.2"}},
		{"no result", check(`shop_error_ratio{service=\"search\"}`, "<", "0.05"), verify.Fail,
			[]string{`query "shop_error_ratio{service=\"search\"}" returned no result`}},
		{"NaN", check(`sum(shop_error_ratio) / 0 * 0`, "<", "1"), verify.Fail, []string{"is NaN"}},
		{"bad query", check(`rate(shop_error_ratio`, "<", "1"), verify.Fail, []string{"bad_data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := mustTask(t, tc.name, tc.props)
			rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result {
				t.Fatalf("report %+v, want %s", rep, tc.result)
			}
			for _, m := range tc.message {
				if !strings.Contains(rep.Tasks[0].Message, m) {
					t.Errorf("message %q does not say %q", rep.Tasks[0].Message, m)
				}
			}
		})
	}
}

// TestPrometheusHugeAnswer: a query whose answer passes the 1 MiB read
// (thousands of series with long labels) fails saying so, quickly, rather
// than as an answer that does not parse; its aggregate passes.
func TestPrometheusHugeAnswer(t *testing.T) {
	reg := prometheus.NewRegistry()
	wide := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shop_wide", Help: "One series per long label value."}, []string{"id"})
	reg.MustRegister(wide)
	const series = 6000
	for i := range series {
		wide.WithLabelValues(fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 200))).Set(1)
	}
	prom := promtest.Start(t, exporter(t, reg))
	prom.WaitFor(t, `count(shop_wide) == 6000`)
	for _, tc := range []struct{ name, query, result, message string }{
		{"every series", "shop_wide", verify.Fail, `query "shop_wide": Prometheus' answer is larger than 1048576 bytes: the query returns too many series; aggregate it (sum, max, topk)`},
		{"aggregated", "max(shop_wide)", verify.Pass, "last value {} 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := mustTask(t, tc.name, `{"prometheus": {"address": "`+prom.URL+`", "query": "`+tc.query+`", "op": "<=", "threshold": 1, "interval": "10s", "duration": "1s"}}`)
			rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result || !strings.Contains(rep.Tasks[0].Message, tc.message) {
				t.Errorf("report %s %q, want %s saying %q", rep.Result, rep.Tasks[0].Message, tc.result, tc.message)
			}
		})
	}
}
