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

// approvers is a GitHub approver policy: logins maps a login to the environments it may approve in.
type approvers map[string][]string

func (a approvers) MayApprove(_ context.Context, env, login string) (bool, string, error) {
	for _, e := range a[login] {
		if e == env {
			return true, "", nil
		}
	}
	return false, "@" + login + " may not approve in " + env, nil
}

// TestMayBreakGlass: the web page's GitHub login is decided by the same rule as the API's callers: by
// default approve:<env> through the GitHub approver policy; never lock:admin, which no GitHub login holds;
// an environment whose rule names only lock:admin refuses every login, saying why. Without the approver
// policy no login may.
func TestMayBreakGlass(t *testing.T) {
	rule := WithBreakGlass(func(env string) []string {
		if env == "prod" {
			return []string{"lock:admin"}
		}
		return nil
	})
	a, err := New(rule, WithApproverPolicy(approvers{"maria": {"staging", "prod"}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		login, env string
		ok         bool
		why        string
	}{
		{"maria", "staging", true, ""},
		{"rita", "staging", false, "@rita may not approve in staging"},
		{"maria", "prod", false, "breaking the glass in prod needs one of lock:admin: maria (github) lacks scope lock:admin"},
	} {
		ok, why, err := a.MayBreakGlass(ctx, tc.login, tc.env)
		if err != nil || ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("MayBreakGlass(%s, %s) = %v, %q, %v; want %v saying %q", tc.login, tc.env, ok, why, err, tc.ok, tc.why)
		}
	}
	none, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if ok, why, _ := none.MayBreakGlass(ctx, "maria", "staging"); ok || !strings.Contains(why, "needs the GitHub approver policy") {
		t.Errorf("without the approver policy: %v, %q; want refused, saying why", ok, why)
	}
}
