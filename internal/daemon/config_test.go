package daemon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// TestExampleConfigLoads keeps examples/reconciler.yaml (shown in the README)
// loading and saying what it says.
func TestExampleConfigLoads(t *testing.T) {
	cfg, err := config.Load("../../examples/reconciler.yaml")
	if err != nil {
		t.Fatalf("examples/reconciler.yaml: %v", err)
	}
	if diff := cmp.Diff([]string{"devel", "prod", "staging"}, cfg.EnvironmentNames()); diff != "" {
		t.Errorf("environments (-want +got):\n%s", diff)
	}
	got := map[string]any{
		"interval": cfg.Source.Interval.Duration,
		"listen":   cfg.Server.Listen,
		"tokens":   cfg.Server.TokensFile,
		"state":    cfg.State.Namespace,
		"prod":     len(cfg.Environments["prod"].Targets),
		"lockPath": cfg.Environments["prod"].LockPath,
	}
	if ts := cfg.Environments["prod"].Targets; len(ts) == 3 {
		got["clusterSecret"] = ts[2].ClusterSecret
	}
	want := map[string]any{
		"interval":      time.Minute,
		"listen":        ":8080",
		"tokens":        "/var/run/secrets/stagehand/tokens/tokens.yaml",
		"state":         "stagehand",
		"prod":          3,
		"lockPath":      "apps/production",
		"clusterSecret": "cluster-prod-ap",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example config (-want +got):\n%s", diff)
	}
}
