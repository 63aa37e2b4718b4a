package ui

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// bigBackend is services × envs, two targets each, every tenth service
// out of sync: the overview's worst realistic case.
type bigBackend struct {
	names []string
	envs  map[string]*status.Environment
}

func newBigBackend(services, envs int) *bigBackend {
	b := &bigBackend{envs: map[string]*status.Environment{}}
	for e := range envs {
		name := fmt.Sprintf("env-%d", e)
		b.names = append(b.names, name)
		env := &status.Environment{Name: name, LockPath: "apps/" + name, Observation: status.Observation{Revision: "abc"}}
		for s := range services {
			svc := status.Service{Name: fmt.Sprintf("service-%03d", s), Version: "1.2.3"}
			for _, t := range []string{"eu", "us"} {
				st := status.ServiceTarget{Target: t, Namespace: "shop", State: status.StateInSync,
					Images: []status.Image{{DockerName: svc.Name, Desired: svc.Name + ":1.2.3", Live: svc.Name + ":1.2.3"}}}
				if s%10 == 0 {
					st.State = status.StateOutOfSync
					st.Images[0].Live = "registry.example.com/" + svc.Name + ":1.2.2"
				}
				svc.Targets = append(svc.Targets, st)
			}
			env.Services = append(env.Services, svc)
		}
		b.envs[name] = env
	}
	return b
}

func (b *bigBackend) EnvironmentNames() []string { return b.names }
func (b *bigBackend) Environment(_ context.Context, env string) (*status.Environment, error) {
	return b.envs[env], nil
}
func (b *bigBackend) Approve(context.Context, string, string, identity.Principal) (*approval.Pending, error) {
	return nil, nil
}
func (b *bigBackend) Reject(context.Context, string, string, approval.Why) (*approval.Pending, error) {
	return nil, nil
}
func (b *bigBackend) LockService() *lock.Service { return nil }

// BenchmarkOverview renders GET / for 500 services × 4 environments (two
// targets each): building the matrix and executing the template, as a
// signed-in browser asks for it. html-bytes is the page's HTML; the
// stylesheet and script are the same for every page (BenchmarkAssets).
func BenchmarkOverview(b *testing.B) {
	s, err := New(newBigBackend(500, 4), WithDemoLogin("demo"), WithRateLimit(0, 0)) // a benchmark reloads as fast as it can
	if err != nil {
		b.Fatal(err)
	}
	rec := record(s, newRequest(http.MethodPost, "/signin/demo"))
	cookie := rec.Result().Cookies()[0]
	var size int
	b.ReportAllocs()
	for b.Loop() {
		req := newRequest(http.MethodGet, "/")
		req.AddCookie(cookie)
		rec := record(s, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET / = %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.StopTimer()
	req := newRequest(http.MethodGet, "/")
	req.AddCookie(cookie)
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	gz := record(s, req)
	if gz.Header().Get("Content-Encoding") != "gzip" {
		b.Fatal("the overview was not gzipped for a browser that accepts it")
	}
	b.ReportMetric(float64(size), "html-bytes")
	b.ReportMetric(float64(gz.Body.Len()), "gzip-bytes")
}

// BenchmarkAssets reports the weight of the page's own stylesheet and script
// (no framework, nothing fetched from elsewhere).
func BenchmarkAssets(b *testing.B) {
	total := 0
	for b.Loop() {
		total = 0
		for _, f := range []string{"assets/static/app.css", "assets/static/app.js"} {
			data, err := fs.ReadFile(assets, f)
			if err != nil {
				b.Fatal(err)
			}
			total += len(data)
		}
	}
	b.ReportMetric(float64(total), "css+js-bytes")
}

// TestBrowserLargeOverview loads the overview of 500 services × 4
// environments in headless Chromium and reports how long the first render
// took (a measurement for the README, not a pass/fail threshold).
func TestBrowserLargeOverview(t *testing.T) {
	base := serve(t, newBigBackend(500, 4), WithDemoLogin("demo"))
	ctx := browse(t, 1280, 900)
	var rows int
	var timing map[string]float64
	if err := chromedp.Run(ctx, chromedp.Navigate(base+"/signin"), chromedp.Click("#signin-demo", chromedp.ByID),
		chromedp.WaitVisible("#matrix", chromedp.ByID), chromedp.Navigate(base+"/"), chromedp.WaitVisible("#matrix", chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#matrix tbody tr").length`, &rows),
		chromedp.Evaluate(`new Promise(done => requestAnimationFrame(() => setTimeout(() => {
  const n = performance.getEntriesByType("navigation")[0];
  const fcp = performance.getEntriesByType("paint").find(p => p.name === "first-contentful-paint");
  done({responseEnd: n.responseEnd, domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd,
    firstContentfulPaint: fcp ? fcp.startTime : -1, transferSize: n.transferSize, decodedBodySize: n.decodedBodySize});
}, 100)))`, &timing, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil {
		t.Fatal(err)
	}
	if rows != 500 {
		t.Errorf("the overview shows %d services, want 500", rows)
	}
	t.Logf("overview of 500 services × 4 environments in Chromium: response end %.0f ms, first contentful paint %.0f ms, DOMContentLoaded %.0f ms, load %.0f ms; %.0f bytes transferred, %.0f decoded",
		timing["responseEnd"], timing["firstContentfulPaint"], timing["domContentLoaded"], timing["load"], timing["transferSize"], timing["decodedBodySize"])
}
