package config

import (
	"testing"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Locks { return c.Locks })
		})
	}
}
