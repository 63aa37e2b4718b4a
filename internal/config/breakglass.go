package config

import (
	"fmt"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/policy"
)

// validateBreakGlass checks windows.breakGlass (at key): each scope is lock, lock:admin or
// approve:<environment> of a configured environment.
func (c *Config) validateBreakGlass(key string, bg *policy.BreakGlass, bad func(field, format string, a ...any)) {
	if bg == nil {
		return
	}
	if len(bg.Scopes) > policy.MaxBreakGlassScopes {
		bad(key+".scopes", "%d scopes: at most %d", len(bg.Scopes), policy.MaxBreakGlassScopes)
		return
	}
	for i, s := range bg.Scopes {
		switch env, approve := strings.CutPrefix(s, "approve:"); {
		case s == "lock", s == "lock:admin":
		case approve && env != "":
			if _, ok := c.Environments[env]; !ok {
				bad(fmt.Sprintf("%s.scopes[%d]", key, i), "%q names no configured environment", s)
			}
		default:
			bad(fmt.Sprintf("%s.scopes[%d]", key, i), "unknown scope %q; accepted: lock, lock:admin, approve:<environment>", s)
		}
	}
}

// BreakGlassScopes is who may break the glass in env (environments.<env>.windows.breakGlass.scopes):
// nil for the default, an empty list for nobody.
func (c *Config) BreakGlassScopes(env string) []string {
	e, ok := c.Environments[env]
	if !ok || e.Windows.BreakGlass == nil {
		return nil
	}
	return append([]string{}, e.Windows.BreakGlass.Scopes...)
}
