package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAuthorizeBreakGlass: break-glass:<env> is had through the environment's rule, by default
// lock:admin or approve:<env>, each scope decided as everywhere else; no credential holds it itself.
func TestAuthorizeBreakGlass(t *testing.T) {
	tokens := WithTokens(
		Token{Name: "ci", Token: "ci-token-0000000001", Scopes: []string{"lock", "approve:staging"}},
		Token{Name: "admin", Token: "admin-token-0000001", Scopes: []string{"lock:admin"}},
		Token{Name: "approver", Token: "approver-token-0001", Scopes: []string{"approve:prod"}},
		Token{Name: "reader", Token: "reader-token-00001", Scopes: []string{"read"}},
	)
	rule := WithBreakGlass(func(env string) []string {
		switch env {
		case "prod":
			return []string{"lock:admin"} // approvers of prod may not
		case "frozen":
			return []string{} // nobody
		}
		return nil // the default
	})
	a, err := New(tokens, rule, WithLegacyToken("legacy-token-000001"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := map[string][]string{}
	for _, tok := range []string{"ci-token-0000000001", "admin-token-0000001", "approver-token-0001", "reader-token-00001", "legacy-token-000001"} {
		p, err := a.Authenticate(ctx, tok)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		for _, env := range []string{"staging", "prod", "frozen"} {
			ok, why, err := a.Authorize(ctx, p, BreakGlassScope(env))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				got[p.Name] = append(got[p.Name], env)
			} else if env == "frozen" && !strings.Contains(why, "nobody may break the glass in frozen") {
				t.Errorf("%s in frozen: why = %q, want it to say nobody may", p.Name, why)
			}
		}
	}
	want := map[string][]string{
		"ci":    {"staging"},         // approve:staging, the default rule
		"admin": {"staging", "prod"}, // lock:admin, in both rules
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environments each may break the glass in (-want +got):\n%s", diff)
	}
	p, _ := a.Authenticate(ctx, "approver-token-0001")
	if _, why, _ := a.Authorize(ctx, p, BreakGlassScope("prod")); !strings.Contains(why, "breaking the glass in prod needs one of lock:admin: approver (token) lacks scope lock:admin") {
		t.Errorf("why = %q, want the rule and the scope it lacks named", why)
	}
}
