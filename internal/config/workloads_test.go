package config

import (
	"testing"
	"time"
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
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Workloads { return c.Workloads })
		})
	}
}
