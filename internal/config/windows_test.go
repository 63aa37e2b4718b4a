package config

import (
	"fmt"
	"testing"
)

// TestWindows: environments.<env>.windows are read and checked at load, errors naming the key.
func TestWindows(t *testing.T) {
	const env = "environments: {prod: {targets: [{name: eu, namespace: apps}], windows: %s}}\n"
	for _, tc := range []struct {
		name, windows string
		want          int // allow and deny windows read
		err           string
	}{
		{name: "none", windows: "{}"},
		{name: "an allow schedule and a freeze", windows: `{allow: [{schedule: "CRON_TZ=Europe/London 0 8 * * 1-4", duration: 9h}], deny: [{name: year-end, from: "2026-12-19", to: "2027-01-04", timeZone: Europe/Berlin}]}`, want: 2},
		{name: "a freeze backwards", windows: `{deny: [{from: "2026-12-19", to: "2026-12-18"}]}`,
			err: "environments.prod.windows: deny[0].to: 2026-12-18 is not after from 2026-12-19"},
		{name: "a schedule without duration", windows: `{allow: [{schedule: "0 8 * * *"}]}`,
			err: `environments.prod.windows: allow[0].duration: "": want a positive duration up to 366 days, e.g. 9h`},
		{name: "an unknown key", windows: `{allow: [{cron: "0 8 * * *"}]}`, err: `unknown field "cron"`},
		{name: "break-glass by lock admins and prod approvers", windows: `{deny: [{from: "2026-12-19", to: "2027-01-04"}], breakGlass: {scopes: [lock:admin, approve:prod]}}`, want: 1},
		{name: "break-glass by nobody", windows: `{breakGlass: {scopes: []}}`},
		{name: "break-glass by an unknown scope", windows: `{breakGlass: {scopes: [admin]}}`,
			err: `environments.prod.windows.breakGlass.scopes[0]: unknown scope "admin"; accepted: lock, lock:admin, approve:<environment>`},
		{name: "break-glass by approvers of an unknown environment", windows: `{breakGlass: {scopes: [lock, approve:staging]}}`,
			err: `environments.prod.windows.breakGlass.scopes[1]: "approve:staging" names no configured environment`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, fmt.Sprintf(env, tc.windows), tc.err, tc.want, func(c *Config) int {
				w := c.Environments["prod"].Windows
				return len(w.Allow) + len(w.Deny)
			})
		})
	}
}
