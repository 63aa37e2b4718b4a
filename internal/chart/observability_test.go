package chart

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/internal/reference"
)

// dashboard is the part of the Grafana dashboard JSON the tests read.
type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboardConfigMap: metrics.dashboard.enabled renders the dashboard
// JSON of the chart, unchanged, into a ConfigMap carrying the label Grafana's
// sidecar looks for (grafana_dashboard: "1" unless set otherwise), in the
// namespace asked; every panel but the rows queries the data source variable.
func TestDashboardConfigMap(t *testing.T) {
	file, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "stagehand.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		dashboard  map[string]any
		wantNS     string
		wantLabels map[string]string
	}{
		{name: "defaults", dashboard: map[string]any{"enabled": true}, wantNS: "rel",
			wantLabels: map[string]string{"grafana_dashboard": "1"}},
		{name: "another label too", wantNS: "rel",
			dashboard:  map[string]any{"enabled": true, "labels": map[string]any{"dashboards": "stagehand"}},
			wantLabels: map[string]string{"dashboards": "stagehand", "grafana_dashboard": "1"}},
		// helm drops a default key set to null: the sidecar's own label only.
		{name: "own label instead, own namespace", wantNS: "monitoring",
			dashboard:  map[string]any{"enabled": true, "labels": map[string]any{"dashboards": "stagehand", "grafana_dashboard": nil}, "namespace": "monitoring"},
			wantLabels: map[string]string{"dashboards": "stagehand"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "rel", valuesFile(t, map[string]any{"metrics": map[string]any{"dashboard": tc.dashboard}}))
			cm := find(t, objs, "ConfigMap", tc.wantNS, "sh-stagehand-dashboard")
			labels := cm.GetLabels()
			for k, v := range tc.wantLabels {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, labels[k], v, labels)
				}
			}
			if _, ok := labels["grafana_dashboard"]; ok && tc.wantLabels["grafana_dashboard"] == "" {
				t.Errorf("labels %v: the default grafana_dashboard label is kept though metrics.dashboard.labels sets it to null", labels)
			}
			data, _, _ := unstructuredString(cm.Object, "data", "stagehand.json")
			if data != strings.TrimRight(string(file), "\n") {
				t.Errorf("the ConfigMap's stagehand.json differs from dashboards/stagehand.json")
			}
		})
	}
	if got := summary(render(t, "rel")); slices.Contains(got, "ConfigMap rel/sh-stagehand-dashboard") {
		t.Errorf("the dashboard is rendered with the default values; it is opt-in")
	}
	var d dashboard
	if err := json.Unmarshal(file, &d); err != nil {
		t.Fatalf("dashboards/stagehand.json: %v", err)
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q queries data source %q, want the variable ${datasource}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var v any = obj
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false, nil
		}
		v = m[f]
	}
	s, ok := v.(string)
	return s, ok, nil
}

// metricName finds the metric names a PromQL expression reads.
var metricName = regexp.MustCompile(`\bstagehand_[a-z_]+`)

// TestObservabilityMetricsDefined: every metric the dashboard's panels and the
// alerts read is one Stagehand defines (docs/reference/metrics.md's list,
// read from the source), so a renamed metric cannot leave a panel or an alert
// silently empty.
func TestObservabilityMetricsDefined(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := reference.Metrics(root)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range ms {
		defined[m.Name] = true
		if m.Type == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				defined[m.Name+s] = true
			}
		}
	}
	file, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "stagehand.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(file, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			for _, name := range metricName.FindAllString(q.Expr, -1) {
				if !defined[name] {
					t.Errorf("panel %q reads %s, which no Stagehand metric is", p.Title, name)
				}
			}
		}
	}
	for _, r := range alertRules(t, render(t, "rel", valuesFile(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}))) {
		for _, name := range metricName.FindAllString(r.Expr, -1) {
			if !defined[name] {
				t.Errorf("alert %s reads %s, which no Stagehand metric is", r.Alert, name)
			}
		}
	}
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// rulesSpec is the spec of the rendered PrometheusRule: a Prometheus rule file.
func rulesSpec(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			spec, ok := o.Object["spec"].(map[string]any)
			if !ok {
				t.Fatalf("PrometheusRule %s has no spec", o.GetName())
			}
			return spec
		}
	}
	t.Fatalf("no PrometheusRule among the rendered objects:\n%s", summary(objs))
	return nil
}

func alertRules(t *testing.T, objs []*unstructured.Unstructured) []rule {
	t.Helper()
	b, err := json.Marshal(rulesSpec(t, objs))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestAlertRules runs promtool on the chart's rendered alerts: `promtool check
// rules`, then `promtool test rules` with testdata/alerts_test.yaml, whose
// cases must cover every alert the chart renders, and name no other. A
// missing promtool fails the test (make prometheus installs Debian's
// prometheus package, which ships it).
func TestAlertRules(t *testing.T) {
	promtool, err := promtest.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	objs := render(t, "rel", valuesFile(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}))
	dir := t.TempDir()
	b, err := yaml.Marshal(rulesSpec(t, objs))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("promtool %s: %v\n%s\nrules.yaml:\n%s", strings.Join(args, " "), err, out.String(), b)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out.String())
	}

	var rendered []string
	for _, r := range alertRules(t, objs) {
		rendered = append(rendered, r.Alert)
	}
	sort.Strings(rendered)
	var cases struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &cases); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, c := range cases.Tests {
		for _, a := range c.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	var tested []string
	for name, fired := range fires {
		tested = append(tested, name)
		if !fired {
			t.Errorf("testdata/alerts_test.yaml never expects %s to fire", name)
		}
	}
	sort.Strings(tested)
	if diff := cmp.Diff(rendered, tested); diff != "" {
		t.Errorf("alerts rendered (-) vs tested by testdata/alerts_test.yaml (+):\n%s", diff)
	}
}

// TestAlertValues: the thresholds and alert labels of metrics.prometheusRule
// reach the rendered rules, and the rule is opt-in.
func TestAlertValues(t *testing.T) {
	objs := render(t, "rel", valuesFile(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{
		"enabled": true, "approvalPendingSeconds": 600, "sourceUnreachableSeconds": 30, "githubBudgetRatio": 0.25,
		"clockOffsetSeconds": 2.5, "for": "1m", "alertLabels": map[string]any{"team": "platform"},
		"labels": map[string]any{"release": "prometheus"},
	}}}))
	byName := map[string]rule{}
	for _, r := range alertRules(t, objs) {
		byName[r.Alert] = r
		if r.Labels["team"] != "platform" || r.Labels["severity"] == "" {
			t.Errorf("alert %s labels %v, want team=platform beside a severity", r.Alert, r.Labels)
		}
	}
	for alert, want := range map[string]string{
		"StagehandApprovalPending":   "> 600",
		"StagehandSourceUnreachable": "> 30",
		"StagehandGitHubBudgetLow":   "< 0.25",
		"StagehandClockOffset":       "> 2.5",
	} {
		if !strings.Contains(byName[alert].Expr, want) {
			t.Errorf("alert %s: expr %q lacks %q", alert, byName[alert].Expr, want)
		}
	}
	for _, alert := range []string{"StagehandNoLeader", "StagehandEnvironmentNotHeld", "StagehandStateWritesFailing", "StagehandClockOffset"} {
		if got := byName[alert].For; got != "1m" {
			t.Errorf("alert %s: for %q, want 1m", alert, got)
		}
	}
	pr := find(t, objs, "PrometheusRule", "rel", "sh-stagehand")
	if got := pr.GetLabels()["release"]; got != "prometheus" {
		t.Errorf("PrometheusRule label release = %q, want prometheus", got)
	}
	if got := summary(render(t, "rel")); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "PrometheusRule") }) {
		t.Errorf("a PrometheusRule is rendered with the default values; it is opt-in")
	}
}
