package config

import "testing"

func TestOnFailedRollout(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       bool // RollsBack
		err        string
	}{
		{name: "default stays", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}]}}\n"},
		{name: "stay", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], onFailedRollout: stay}}\n"},
		{name: "rollback", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], onFailedRollout: rollback}}\n", want: true},
		{name: "unknown", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], onFailedRollout: revert}}\n",
			err: `environments.prod.onFailedRollout: unknown value "revert"; accepted: stay, rollback`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) bool { return c.Environments["prod"].RollsBack() })
		})
	}
}
