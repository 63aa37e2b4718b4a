package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/reference"
)

// TestReferenceGenerated fails when a generated page under docs/reference
// (the commands and flags, the metrics) is not what the code says now.
func TestReferenceGenerated(t *testing.T) {
	pages, err := reference.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range pages {
		t.Run(path, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join("..", path))
			if err != nil {
				t.Fatalf("%v: run make docs-gen", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run make docs-gen (or go generate ./docs) and commit it (-generated +file):\n%s",
					path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}

// TestMetricsFound checks that the metrics reference finds the metrics each
// way of defining one reads: a *Opts literal, a Vec's labels, constant
// labels, and a Desc of a custom collector.
func TestMetricsFound(t *testing.T) {
	ms, err := reference.Metrics("..")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = m.Type + " " + strings.Join(m.Labels, ",")
	}
	for name, want := range map[string]string{
		"stagehand_reconcile_duration_seconds": "histogram environment,result",
		"stagehand_leader":                     "gauge ",
		"stagehand_build_info":                 "gauge commit,goversion,version",
		"stagehand_revision_age_seconds":       "gauge environment",
		"stagehand_source_errors_total":        "counter ",
		"stagehand_notifications_total":        "counter sink,result",
		"stagehand_github_requests_total":      "counter code",
	} {
		if got[name] != want {
			t.Errorf("metric %s: got %q, want %q", name, got[name], want)
		}
	}
}
