package auth

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakePolicies: maria approves prod, rita reads only, mallory nothing.
type fakePolicies struct{}

func (fakePolicies) MayApprove(_ context.Context, env, login string) (bool, string, error) {
	return login == "maria" && env == "prod", "@" + login + " may not approve " + env, nil
}

func (fakePolicies) MayRead(_ context.Context, login string) (bool, string, error) {
	if login == "maria" || login == "rita" {
		return true, "read on acme/manifests", nil
	}
	return false, "@" + login + " has no access to acme/manifests", nil
}

// TestReadAndLockRules: who reads and who locks under each lock rule, by
// kind of credential; GitHub logins have no scopes of their own and never
// lock:admin.
func TestReadAndLockRules(t *testing.T) {
	ctx := context.Background()
	tokens := []Token{
		{Name: "viewer", Token: "viewer-token-00000001", Scopes: []string{"read"}},
		{Name: "stager", Token: "stager-token-00000001", Scopes: []string{"approve:staging"}},
		{Name: "locker", Token: "locker-token-00000001", Scopes: []string{"lock"}},
	}
	callers := map[string]Principal{"legacy": {Name: LegacyName, Kind: KindToken, Scopes: []string{ScopeRead, ScopeLock}, legacy: true}}
	for _, name := range []string{"maria", "rita", "mallory"} {
		callers["github:"+name] = Principal{Name: name, Kind: KindGitHub}
	}
	for _, rule := range []LockRule{LockApprovers, LockScope, LockReaders} {
		t.Run(string(rule), func(t *testing.T) {
			a, err := New(WithTokens(tokens...), WithApproverPolicy(fakePolicies{}), WithReadPolicy(fakePolicies{}), WithLockRule(rule, "staging", "prod"))
			if err != nil {
				t.Fatal(err)
			}
			all := map[string]Principal{}
			for k, v := range callers {
				all[k] = v
			}
			for _, tok := range tokens {
				p, err := a.Authenticate(ctx, tok.Token)
				if err != nil {
					t.Fatal(err)
				}
				all["token:"+tok.Name] = p
			}
			got := map[string][]string{}
			for who, p := range all {
				for _, scope := range []string{ScopeRead, ScopeLock, ScopeLockAdmin} {
					ok, why, err := a.Authorize(ctx, p, scope)
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						got[scope] = append(got[scope], who)
					} else if why == "" {
						t.Errorf("%s refused %s without a reason", who, scope)
					}
				}
			}
			want := map[string][]string{
				ScopeRead: {"github:maria", "github:rita", "legacy", "token:locker", "token:stager", "token:viewer"},
			}
			switch rule {
			case LockApprovers:
				want[ScopeLock] = []string{"github:maria", "legacy", "token:locker", "token:stager"}
			case LockScope:
				want[ScopeLock] = []string{"legacy", "token:locker"}
			case LockReaders:
				want[ScopeLock] = want[ScopeRead]
			}
			for k := range got {
				slices.Sort(got[k])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("granted (-want +got):\n%s", diff)
			}
			if _, why, _ := a.Authorize(ctx, callers["github:mallory"], ScopeRead); !strings.Contains(why, "reading needs a role on the manifests repository (read or higher): @mallory has no access") {
				t.Errorf("mallory's read refused with %q", why)
			}
		})
	}
	// Without a read policy a GitHub login reads nothing.
	a, err := New(WithApproverPolicy(fakePolicies{}))
	if err != nil {
		t.Fatal(err)
	}
	if ok, why, _ := a.Authorize(ctx, callers["github:maria"], ScopeRead); ok || !strings.Contains(why, "no GitHub read policy") {
		t.Errorf("maria reads without a read policy: %v %q", ok, why)
	}
	if _, err := New(WithLockRule("everyone")); err == nil {
		t.Error("WithLockRule(everyone) accepted")
	}
}
