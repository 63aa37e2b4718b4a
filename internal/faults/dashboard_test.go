package faults

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/chart"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// panelQuery is one query of a panel of the chart's Grafana dashboard.
type panelQuery struct {
	panel, expr string
	stat        bool // a stat panel's: Grafana asks for one value (instant)
}

// dashboardPanels reads the queries of every panel of the chart's dashboard.
func dashboardPanels(t *testing.T) []panelQuery {
	t.Helper()
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dashboards", "stagehand.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr    string `json:"expr"`
				Instant bool   `json:"instant"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []panelQuery
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out = append(out, panelQuery{panel: p.Title, expr: q.Expr, stat: q.Instant})
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// grafanaVariables replaces the dashboard's variables as Grafana would for
// every environment over the last hour.
var grafanaVariables = strings.NewReplacer(`$__rate_interval`, "1m", `$__range_s`, "3600", `$__range`, "1h",
	`=~"$environment"`, `=~".*"`)

// TestDashboardQueries runs a demo-like day of a reconciler, the real binary,
// and has a real Prometheus scrape it; then every query of every panel of the
// chart's Grafana dashboard, its variables set as Grafana sets them for every
// environment over the last hour, returns series. The run: two environments
// with a Lease each (leaderElection.perEnvironment), digests pinned from a
// real registry, GitHub (check runs, one answered 502 and retried), a
// webhook notification sink; devel deploys on each push webhook and verifies
// by an http check: a deploy that succeeds, a broken manifest, a deploy
// whose verification fails, and one that succeeds again; prod's plan waits
// for approval.
func TestDashboardQueries(t *testing.T) {
	const n = 2
	ctx := t.Context()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	reg := registrytest.New(t)
	for i := range n {
		for _, v := range []string{"1.0.0", "2.0.0", "3.0.0", "4.0.0"} {
			reg.Push(t, "team/"+svc(i), v)
		}
	}
	// The shop devel's http check asks; healthy until told otherwise.
	var broken atomic.Bool
	shop := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	var notified atomic.Int64
	sink := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { notified.Add(1) }))

	pipeline := `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties:
          http: {url: "http://` + shop + `/healthz", bodyRegexp: '"status":"ok"', interval: 300ms, duration: 900ms}
      - release
  - name: prod
`
	files := func(devel, prod string) map[string]string {
		m := map[string]string{"pipeline.yaml": pipeline}
		for env, v := range map[string]string{"devel": devel, "prod": prod} {
			m["environments/"+env+"/manifest.json"] = manifest(n, v)["environments/devel/manifest.json"]
		}
		m["environments/prod/manifest.json"] = strings.Replace(m["environments/prod/manifest.json"], `"skipConfirmation":true`, `"skipConfirmation":false`, 1)
		return m
	}
	f := newFixture(t, files("1.0.0", "1.0.0"))
	prodNS := f.env.Namespace(t)
	for i := range n {
		f.env.CreateDeployment(t, f.ns, svc(i), reg.Ref("team/"+svc(i), "1.0.0"))
		f.env.CreateDeployment(t, prodNS, svc(i), reg.Ref("team/"+svc(i), "1.0.0"))
	}
	for name, content := range map[string]string{"app.pem": string(gh.App().PrivateKeyPEM()), "hook": "hook-secret\n", "sink-url": "http://" + sink + "/\n", "sink-key": "sink-secret\n"} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.config["environments"].(map[string]any)["prod"] = map[string]any{"lockPath": "apps/prod", "targets": []any{
		map[string]any{"name": "a", "namespace": prodNS},
	}}
	f.config["registry"] = map[string]any{"pinDigests": true, "verifyDigests": true, "insecure": []any{reg.Host()}}
	f.config["leaderElection"] = map[string]any{"perEnvironment": true}
	f.config["verification"] = map[string]any{"allowAddresses": []any{"127.0.0.1/32"}}
	f.config["notifications"] = []any{map[string]any{"name": "audit", "type": "webhook", "urlFile": filepath.Join(f.dir, "sink-url"),
		"secretFile": filepath.Join(f.dir, "sink-key")}}
	f.config["github"] = map[string]any{"apiURL": gh.URL(), "owner": "acme", "repo": "manifests",
		"webhookSecretFile": filepath.Join(f.dir, "hook"),
		"app":               map[string]any{"appID": gh.App().ID(), "installationID": gh.App().InstallationID(), "privateKeyFile": filepath.Join(f.dir, "app.pem")}}
	a := f.start(t, "replica-a", nil)
	prom := promtest.Start(t, a.addr)
	prom.WaitFor(t, "stagehand_build_info")

	// commit commits files, mirrors the commit to GitHub and sends the push webhook.
	commit := func(files map[string]string, msg string) string {
		t.Helper()
		rev := f.git.Repo("manifests").Commit(t, "main", files, msg)
		gh.Repo("acme", "manifests").MirrorCommit("main", rev, files, msg)
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q,"full_name":"acme/manifests"}}`, rev, f.gitURL)
		code, answer, err := githubtest.Send(ctx, "http://"+a.addr+"/webhook/github", "hook-secret", githubtest.Delivery{Event: "push", ID: "push-" + rev[:8], Body: []byte(body)})
		if err != nil || code != http.StatusOK {
			t.Fatalf("push webhook: %d %s %v", code, answer, err)
		}
		return rev
	}
	// deployed waits for devel's newest history entry to be rev's, ended result.
	deployed := func(rev, result string) {
		t.Helper()
		testenv.WaitFor(t, 3*time.Minute, "devel's deploy of "+rev[:8]+" "+result, func() bool {
			h, ok := f.history(ctx, a)
			return ok && len(h) > 0 && h[0].Revision == rev && h[0].Result == result
		})
	}

	gh.Faults().Inject(githubtest.Fault{Method: http.MethodPost, Route: checkRuns, Status: http.StatusBadGateway})
	deployed(commit(files("2.0.0", "1.0.0"), "devel to 2.0.0"), "succeeded")
	broke := f.git.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": "{not json"}, "a broken manifest")
	testenv.WaitFor(t, time.Minute, "the broken manifest "+broke[:8]+" counted as a failure", func() bool {
		return a.metric(ctx, "stagehand_failures_total") > 0
	})
	broken.Store(true)
	deployed(commit(files("3.0.0", "1.0.0"), "devel to 3.0.0"), "failed")
	broken.Store(false)
	deployed(commit(files("4.0.0", "1.0.0"), "devel to 4.0.0"), "succeeded")
	prodRev := commit(files("4.0.0", "2.0.0"), "prod to 2.0.0")
	testenv.WaitFor(t, time.Minute, "prod's plan of "+prodRev[:8]+" pending", func() bool {
		var e struct {
			Pending *struct {
				Revision string `json:"revision"`
			} `json:"pending"`
		}
		return a.get(ctx, f.token, "/api/v1/environments/prod", &e) == http.StatusOK && e.Pending != nil && e.Pending.Revision == prodRev
	})
	if notified.Load() == 0 {
		t.Errorf("the webhook sink got no notification")
	}

	// Two scrapes after the last change, so that every rate has its samples.
	time.Sleep(2500 * time.Millisecond)
	var empty []string
	for _, q := range dashboardPanels(t) {
		expr := grafanaVariables.Replace(q.expr)
		series, err := prom.Query(ctx, expr)
		switch {
		case err != nil:
			t.Errorf("panel %q: %v", q.panel, err)
		case len(series) == 0:
			empty = append(empty, fmt.Sprintf("panel %q: %s", q.panel, expr))
		default:
			t.Logf("panel %q: %d series", q.panel, len(series))
		}
	}
	if len(empty) > 0 {
		t.Errorf("queries that returned no series:\n  %s", strings.Join(empty, "\n  "))
	}
}

// serve serves h on a loopback address until the test ends and returns the
// address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return l.Addr().String()
}
