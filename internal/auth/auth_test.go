package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

func TestTokensFileRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"not a list", "name: x", "decoding"},
		{"unknown field", "- {name: a, token: aaaaaaaaaaaaaaaa, scopes: [read], scope: x}", `unknown field "scope"`},
		{"no name", "- {token: aaaaaaaaaaaaaaaa, scopes: [read]}", "entry 0: name is required"},
		{"name with space", "- {name: 'a b', token: aaaaaaaaaaaaaaaa, scopes: [read]}", `entry 0 (a b): name "a b"`},
		{"twice", "- {name: a, token: aaaaaaaaaaaaaaaa, scopes: [read]}\n- {name: a, token: bbbbbbbbbbbbbbbb, scopes: [read]}", `entry 1 (a): name "a" is used twice`},
		{"same token", "- {name: a, token: aaaaaaaaaaaaaaaa, scopes: [read]}\n- {name: b, token: aaaaaaaaaaaaaaaa, scopes: [read]}", "entry 1 (b): the same token as a"},
		{"both", "- {name: a, token: aaaaaaaaaaaaaaaa, sha256: ab, scopes: [read]}", "want exactly one of token and sha256"},
		{"neither", "- {name: a, scopes: [read]}", "want exactly one of token and sha256"},
		{"short", "- {name: a, token: short, scopes: [read]}", "at least 16 characters"},
		{"bad sha", "- {name: a, sha256: xyz, scopes: [read]}", "sha256: want 64 hex digits"},
		{"no scopes", "- {name: a, token: aaaaaaaaaaaaaaaa}", "scopes: want at least one"},
		{"bad scope", "- {name: a, token: aaaaaaaaaaaaaaaa, scopes: [read, aprove:prod]}", `scopes[1]: scope "aprove:prod": want read, lock, lock:admin, approve:<environment> or approve:*`},
		{"reserved", "- {name: stagehand-reconciler, token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "stagehand-reconciler" is reserved`},
		{"legacy name", "- {name: api-token, token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "api-token" is reserved`},
		{"rollback", "- {name: rollback, token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "rollback" is reserved: Stagehand uses the names`},
		{"stagehand", "- {name: stagehand, token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "stagehand" is reserved`},
		{"skipConfirmation", "- {name: skipConfirmation, token: aaaaaaaaaaaaaaaa, scopes: [approve:*]}", `name "skipConfirmation" is reserved`},
		{"reserved in another case", "- {name: Stagehand-Reconciler, token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "Stagehand-Reconciler" is reserved`},
		{"actsFor without a kind", "- {name: alice-cli, token: aaaaaaaaaaaaaaaa, scopes: [read], actsFor: alice}", `actsFor "alice": want the person the token acts for as github:<login>`},
		{"actsFor a token", "- {name: alice-cli, token: aaaaaaaaaaaaaaaa, scopes: [read], actsFor: 'token:ci'}", `actsFor "token:ci": want`},
		{"actsFor Stagehand", "- {name: alice-cli, token: aaaaaaaaaaaaaaaa, scopes: [read], actsFor: 'github:rollback'}", `actsFor "github:rollback" is reserved`},
		{"stagehand kind", "- {name: 'stagehand:reconciler', token: aaaaaaaaaaaaaaaa, scopes: [lock]}", `name "stagehand:reconciler" is reserved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := New(WithTokensFile(path))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "server.tokensFile") {
				t.Errorf("New = %v, want an error naming server.tokensFile and %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "aaaaaaaaaaaaaaaa") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// TestAuthorize: what the scopes of a named token grant, by name or by the
// SHA-256 of the token.
func TestAuthorize(t *testing.T) {
	const sum = "4bc8ceb2a8d0e8c7f5fc8c7b64b4ec8f0d0b60e51f7d3dc3e6cd8bd9ac8e4a1f" // not any token's
	a, err := New(WithTokens(
		Token{Name: "ci", Token: "ci-token-0000000001", Scopes: []string{"lock", "approve:staging"}},
		Token{Name: "oncall", Token: "oncall-token-000001", Scopes: []string{"lock:admin", "approve:*"}},
		// printf %s hashed-token-00001 | sha256sum
		Token{Name: "hashed", SHA256: "f21ac0bff34f9bf8706b85d7044cc1770156e12833a3ee637aa3c63d2b677001", Scopes: []string{"read"}},
		Token{Name: "other", SHA256: sum, Scopes: []string{"read"}},
	), WithLegacyToken("legacy-token-000001"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := map[string][]string{}
	for _, tok := range []string{"ci-token-0000000001", "oncall-token-000001", "legacy-token-000001", "hashed-token-00001"} {
		p, err := a.Authenticate(ctx, tok)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		for _, scope := range []string{"read", "lock", "lock:admin", "approve:staging", "approve:prod"} {
			if ok, _, err := a.Authorize(ctx, p, scope); err != nil {
				t.Fatal(err)
			} else if ok {
				got[p.Name] = append(got[p.Name], scope)
			}
		}
	}
	want := map[string][]string{
		"ci":        {"read", "lock", "approve:staging"},
		"oncall":    {"read", "lock", "lock:admin", "approve:staging", "approve:prod"},
		"api-token": {"read", "lock"},
		"hashed":    {"read"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("granted scopes (-want +got):\n%s", diff)
	}
	if _, err := a.Authenticate(ctx, "ci-token-000000000"); err == nil || !strings.Contains(err.Error(), "unknown bearer token") {
		t.Errorf("a prefix of a token = %v, want unknown", err)
	}
}

func TestGitHubTokenShapes(t *testing.T) {
	for tok, want := range map[string]bool{
		"ghp_abc": true, "gho_abc": true, "ghu_abc": true, "github_pat_abc": true,
		"ghs_abc": false, "eyJhbGciOi.x.y": false, "plain-token": false,
	} {
		if got := looksGitHub(tok); got != want {
			t.Errorf("looksGitHub(%q) = %v, want %v", tok, got, want)
		}
	}
	if !looksJWT("eyJhbGciOi.eyJzdWIi.sig") || looksJWT("eyJ.only-one-dot") {
		t.Error("looksJWT")
	}
}

func TestGitHubCacheBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	g := &gitHubUsers{now: func() time.Time { return now }, cache: map[[32]byte]cached{}}
	for i := range maxCached + 10 {
		var k [32]byte
		k[0], k[1], k[2] = byte(i), byte(i>>8), byte(i>>16)
		g.remember(k, cached{login: "x", expires: now.Add(time.Minute)}, now)
	}
	if n := len(g.cache); n > maxCached {
		t.Errorf("cache holds %d entries, want at most %d", n, maxCached)
	}
}

// TestLegacyTokenWarns: the legacy token logs its deprecation once, at New.
func TestLegacyTokenWarns(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	a, err := New(WithLegacyToken("legacy-token-000001"), WithLog(log))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Authenticate(context.Background(), "legacy-token-000001"); err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "server.apiTokenFile is deprecated") || strings.Contains(lines[0], "legacy-token-000001") {
		t.Errorf("logged %q, want one deprecation warning without the token", lines)
	}
	if _, err := New(WithLegacyToken("two words")); err == nil || !strings.Contains(err.Error(), "white space") {
		t.Errorf("a legacy token with a space = %v", err)
	}
}

// TestTokenActsFor: a named token that declares actsFor is that person for every rule; one without is
// automation.
func TestTokenActsFor(t *testing.T) {
	a, err := New(WithTokens(
		Token{Name: "alice-cli", Token: "alice-token-000001", Scopes: []string{"approve:*"}, ActsFor: "github:alice"},
		Token{Name: "ci", Token: "ci-token-0000000001", Scopes: []string{"approve:*"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), "alice-token-000001")
	if err != nil {
		t.Fatal(err)
	}
	if person, ok := p.Identity().Person(); !ok || person.String() != "github:alice" || p.ID().String() != "token:alice-cli" {
		t.Errorf("token acting for alice = %s, person %s %v; want token:alice-cli for github:alice", p.ID(), person, ok)
	}
	ci, err := a.Authenticate(context.Background(), "ci-token-0000000001")
	if err != nil || !ci.Identity().Automation() {
		t.Errorf("token without actsFor = %+v, %v; want automation", ci, err)
	}
}

// logins is an approver policy that lets the listed logins approve in the listed environments
// (login → environments), and records whom it was asked about.
type logins struct {
	may   map[string][]string
	asked []string
}

func (l *logins) MayApprove(_ context.Context, env, login string) (bool, string, error) {
	l.asked = append(l.asked, env+" "+login)
	for _, e := range l.may[strings.ToLower(login)] {
		if e == env {
			return true, "member of acme/" + env + "-approvers", nil
		}
	}
	return false, "@" + login + " is in no team that approves " + env, nil
}

// TestActsForFollowsThePersonsPolicy: a token acting for a person approves only where the person's
// GitHub login would be allowed (teams, minPermission: the approver policy asked for the login), on
// top of its own scopes; a token acting for nobody is decided by its scopes alone.
func TestActsForFollowsThePersonsPolicy(t *testing.T) {
	toks := WithTokens(
		Token{Name: "alice-cli", Token: "alice-token-000001", Scopes: []string{"approve:*"}, ActsFor: "github:alice"},
		Token{Name: "bob-cli", Token: "bob-token-00000001", Scopes: []string{"approve:staging"}, ActsFor: "github:Bob"},
		Token{Name: "ci", Token: "ci-token-0000000001", Scopes: []string{"approve:*"}},
	)
	pol := &logins{may: map[string][]string{"alice": {"staging"}, "bob": {"staging", "prod"}}}
	a, err := New(toks, WithApproverPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	noGitHub, err := New(toks)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		a       *Authenticator
		token   string
		env     string
		want    bool
		wantWhy string
	}{
		{"alice's token where alice may", a, "alice-token-000001", "staging", true, ""},
		{"alice's token where alice may not", a, "alice-token-000001", "prod", false,
			"token:alice-cli acts for github:alice, who may not approve in prod: @alice is in no team that approves prod"},
		{"bob's token beyond its own scopes", a, "bob-token-00000001", "prod", false, "bob-cli (token) lacks scope approve:prod"},
		{"bob's token within its scopes", a, "bob-token-00000001", "staging", true, ""},
		{"automation token: its scopes decide", a, "ci-token-0000000001", "prod", true, ""},
		{"alice's token without a policy to ask", noGitHub, "alice-token-000001", "staging", false,
			"token:alice-cli acts for github:alice, and approving as a GitHub login needs the GitHub approver policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := tt.a.Authenticate(ctx, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			ok, why, err := tt.a.Authorize(ctx, p, ApproveScope(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("Authorize(%s, approve:%s) = %v %q, want %v containing %q", p.ID(), tt.env, ok, why, tt.want, tt.wantWhy)
			}
		})
	}
	// The policy is asked about the person's login, never the token's name, and only when the scopes allow.
	want := []string{"staging alice", "prod alice", "staging Bob"}
	if diff := cmp.Diff(want, pol.asked); diff != "" {
		t.Errorf("logins asked (-want +got):\n%s", diff)
	}
}
