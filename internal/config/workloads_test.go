package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Workloads
		err        string
	}{
		{name: "defaults", yaml: "{}", want: Workloads{SelectorLabel: "app.kubernetes.io/name", RolloutTimeout: Duration{5 * time.Minute}, Concurrency: 16}},
		{name: "own label", yaml: "workloads: {selectorLabel: acme.com/service, concurrency: 4}", want: Workloads{SelectorLabel: "acme.com/service", RolloutTimeout: Duration{5 * time.Minute}, Concurrency: 4}},
		{name: "label with a space", yaml: "workloads: {selectorLabel: app name}", err: `workloads.selectorLabel: invalid label key "app name": name part must consist of alphanumeric characters`},
		{name: "two slashes", yaml: "workloads: {selectorLabel: a/b/c}", err: `workloads.selectorLabel: invalid label key "a/b/c": a valid label key must consist of`},
		{name: "negative concurrency", yaml: "workloads: {concurrency: -1}", err: "workloads.concurrency: must be positive, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Workloads); diff != "" {
				t.Errorf("workloads (-want +got):\n%s", diff)
			}
		})
	}
}
