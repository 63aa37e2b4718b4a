package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

func TestLocks(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Locks
		err        string
	}{
		{name: "defaults", yaml: "{}", want: Locks{Storage: "kubernetes", Namespace: "stagehand"}},
		{name: "memory", yaml: "locks: {storage: memory, namespace: deploy-locks}", want: Locks{Storage: "memory", Namespace: "deploy-locks"}},
		{name: "unknown storage", yaml: "locks: {storage: dynamodb}", err: `locks.storage: unknown storage "dynamodb"; accepted: kubernetes, memory`},
		{name: "bad namespace", yaml: "locks: {namespace: Deploy_Locks}", err: `locks.namespace: invalid namespace "Deploy_Locks": want a DNS label`},
		{name: "unknown key", yaml: "locks: {table: x}", err: `unknown field "table"`},
		{name: "lock rule and maxima", yaml: "locks: {rule: scope, maxDuration: {freeze: 14d, incident: none}}",
			want: Locks{Storage: "kubernetes", Namespace: "stagehand", Rule: "scope", MaxDuration: LockDurations{Freeze: "14d", Incident: "none"}}},
		{name: "unknown lock rule", yaml: "locks: {rule: everyone}", err: `locks.rule: unknown rule "everyone"; accepted: approvers, scope, readers`},
		{name: "bad maximum", yaml: "locks: {maxDuration: {freeze: forever}}", err: `locks.maxDuration.freeze: invalid duration "forever": want a number with a unit s, m, h or d, such as 90m, 6h or 2d, or none for no maximum`},
		{name: "zero maximum", yaml: "locks: {maxDuration: {deploy: 0s}}", err: `locks.maxDuration.deploy: invalid duration "0s": must be longer than zero, or none`},
		{name: "unknown lock type", yaml: "locks: {maxDuration: {nuke: 1h}}", err: `unknown field "nuke"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Locks { return c.Locks })
		})
	}
}

// TestLockDurations: the maxima by lock type, "none" as no maximum, types
// left out not in the map (pkg/lock's defaults stay).
func TestLockDurations(t *testing.T) {
	got, err := LockDurations{Deploy: "12h", Freeze: "none"}.Durations()
	if err != nil {
		t.Fatal(err)
	}
	want := map[lock.Type]time.Duration{lock.Deploy: 12 * time.Hour, lock.Freeze: lock.NoMaximum}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Durations (-want +got):\n%s", diff)
	}
}
