package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/chart"
	"github.com/stagehand-gitops/stagehand/internal/promtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// alerting starts a real Prometheus that scrapes the replicas every second
// and evaluates the chart's alerts (its PrometheusRule rendered by helm with
// metrics.prometheusRule set to rule, over enabled: true) every second.
func alerting(t *testing.T, rule map[string]any, rs ...*replica) *promtest.Server {
	t.Helper()
	ctx := t.Context()
	h, err := chart.Find(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"enabled": true}
	for k, x := range rule {
		v[k] = x
	}
	vb, err := yaml.Marshal(map[string]any{"metrics": map[string]any{"prometheusRule": v}})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	values := filepath.Join(tmp, "values.yaml")
	if err := os.WriteFile(values, vb, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := h.Template(ctx, chart.Release{Dir: dir, Name: "sh", Namespace: "faults"}, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Objects(out)
	if err != nil {
		t.Fatal(err)
	}
	var spec any
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			spec = o.Object["spec"]
		}
	}
	if spec == nil {
		t.Fatal("the chart rendered no PrometheusRule with metrics.prometheusRule.enabled")
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(tmp, "rules.yaml")
	if err := os.WriteFile(rules, b, 0o600); err != nil {
		t.Fatal(err)
	}
	targets := make([]string, len(rs))
	for i, r := range rs {
		targets[i] = r.addr
	}
	return promtest.StartWith(t, promtest.Config{Targets: targets, RuleFiles: []string{rules}})
}

// firing returns the alerts named name that fire now.
func firing(ctx context.Context, s *promtest.Server, name string) ([]promtest.Alert, error) {
	all, err := s.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []promtest.Alert
	for _, a := range all {
		if a.Labels["alertname"] == name && a.State == "firing" {
			out = append(out, a)
		}
	}
	return out, nil
}

// waitFiring waits until alert name fires, and returns it.
func waitFiring(t *testing.T, s *promtest.Server, name string, timeout time.Duration) promtest.Alert {
	t.Helper()
	var got []promtest.Alert
	testenv.WaitFor(t, timeout, "alert "+name+" firing", func() bool {
		var err error
		got, err = firing(t.Context(), s, name)
		return err == nil && len(got) > 0
	})
	return got[0]
}

// waitResolved waits until alert name neither fires nor is pending, its
// rule evaluating without error.
func waitResolved(t *testing.T, s *promtest.Server, name string, timeout time.Duration) {
	t.Helper()
	testenv.WaitFor(t, timeout, "alert "+name+" resolved", func() bool {
		all, err := s.Alerts(t.Context())
		if err != nil {
			return false
		}
		for _, a := range all {
			if a.Labels["alertname"] == name {
				return false
			}
		}
		health, err := s.RuleHealth(t.Context())
		return err == nil && health[name] == ""
	})
}
