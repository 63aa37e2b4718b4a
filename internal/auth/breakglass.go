package auth

import (
	"context"
	"fmt"
	"strings"
)

// ScopeBreakGlass is a prefix: break-glass:<env> is what letting a plan through env's closed deploy
// windows needs. No credential holds it as such: a caller has it when it has one of the scopes of env's
// break-glass rule (WithBreakGlass; by default lock:admin or approve:<env>), each decided as every door
// decides it (token scopes, GitHub's approver policy, Kubernetes RBAC).
const ScopeBreakGlass = "break-glass:"

// BreakGlassScope is the scope that breaking the glass in env needs.
func BreakGlassScope(env string) string { return ScopeBreakGlass + env }

// DefaultBreakGlass are the scopes of an environment's break-glass rule when it names none.
func DefaultBreakGlass(env string) []string { return []string{ScopeLockAdmin, ApproveScope(env)} }

// WithBreakGlass sets the break-glass rule: the scopes, any one of which lets a caller break the glass
// in an environment (environments.<env>.windows.breakGlass.scopes). rule returns nil for the default
// (DefaultBreakGlass), an empty list for nobody.
func WithBreakGlass(rule func(env string) []string) Option {
	return func(o *options) error {
		o.breakGlass = rule
		return nil
	}
}

// authorizeBreakGlass decides break-glass:<env>: p must have one of the scopes of env's rule.
func (a *Authenticator) authorizeBreakGlass(ctx context.Context, p Principal, env string) (bool, string, error) {
	var scopes []string
	if a.o.breakGlass != nil {
		scopes = a.o.breakGlass(env)
	}
	if scopes == nil {
		scopes = DefaultBreakGlass(env)
	}
	if len(scopes) == 0 {
		return false, fmt.Sprintf("nobody may break the glass in %s (windows.breakGlass.scopes is empty)", env), nil
	}
	var whys []string
	for _, s := range scopes {
		if strings.HasPrefix(s, ScopeBreakGlass) {
			continue // never its own rule
		}
		ok, why, err := a.Authorize(ctx, p, s)
		if err != nil {
			return false, "", err
		}
		if ok {
			return true, fmt.Sprintf("%s has %s", p.ID(), s), nil
		}
		whys = append(whys, why)
	}
	return false, fmt.Sprintf("breaking the glass in %s needs one of %s: %s", env, strings.Join(scopes, ", "), strings.Join(whys, "; ")), nil
}

// MayBreakGlass decides break-glass:<env> for a GitHub login signed in elsewhere (the web page's session):
// the rule the API's route asks, for github:<login> (ui.BreakGlassRule).
func (a *Authenticator) MayBreakGlass(ctx context.Context, login, env string) (bool, string, error) {
	return a.Authorize(ctx, Principal{Name: login, Kind: KindGitHub}, BreakGlassScope(env))
}
