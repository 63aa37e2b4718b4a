package config

import "testing"

func TestRolloutsPromote(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       bool // PromotesRollouts
		err        string
	}{
		{name: "no rollouts", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}]}}\n"},
		{name: "default waits", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], rollouts: {}}}\n"},
		{name: "wait", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], rollouts: {promote: wait}}}\n"},
		{name: "auto", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], rollouts: {promote: auto}}}\n", want: true},
		{name: "unknown", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], rollouts: {promote: full}}}\n",
			err: `environments.prod.rollouts.promote: unknown value "full"; accepted: wait, auto`},
		{name: "unknown key", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}], rollouts: {promotion: auto}}}\n",
			err: `promotion`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) bool { return c.Environments["prod"].PromotesRollouts() })
		})
	}
}
