package config

import (
	"testing"
	"time"
)

func TestDORA(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       DORA
		err        string
	}{
		{name: "unset", yaml: "{}", want: DORA{}},
		{name: "a window", yaml: `dora: {rollbackWindow: 72h}`, want: DORA{RollbackWindow: Duration{72 * time.Hour}}},
		{name: "negative", yaml: `dora: {rollbackWindow: -1h}`, err: `dora.rollbackWindow: -1h0m0s: want a duration from 0 (the default, 24h) to 720h0m0s`},
		{name: "too long", yaml: `dora: {rollbackWindow: 9000h}`, err: `dora.rollbackWindow: 9000h0m0s: want a duration from 0`},
		{name: "not a duration", yaml: `dora: {rollbackWindow: 3d}`, err: `invalid duration "3d"`},
		{name: "unknown key", yaml: `dora: {window: 1h}`, err: `unknown field "window"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) DORA { return c.DORA })
		})
	}
}
