package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// The tests' named tokens: token (ops) may do everything; the others as named.
const (
	opsName      = "ops"
	viewerToken  = "viewer-test-token-0001"
	stagingToken = "staging-approver-token-01"
	lockerToken  = "ci-locker-test-token-01"
	adminToken   = "lock-admin-test-token-01"
	legacyToken  = "legacy-api-test-token-1"
)

func testTokens() []auth.Token {
	return []auth.Token{
		{Name: opsName, Token: token, Scopes: []string{"read", "lock:admin", "approve:*"}},
		{Name: "viewer", Token: viewerToken, Scopes: []string{"read"}},
		{Name: "staging-bot", Token: stagingToken, Scopes: []string{"read", "approve:staging"}},
		{Name: "ci-locker", Token: lockerToken, Scopes: []string{"lock"}},
		{Name: "oncall", Token: adminToken, Scopes: []string{"lock:admin"}},
	}
}

// withOps is the API's authentication in these tests: the named tokens, and the legacy token.
func withOps(tb testing.TB, opts ...auth.Option) Option {
	tb.Helper()
	a, err := auth.New(append([]auth.Option{auth.WithTokens(testTokens()...), auth.WithLegacyToken(legacyToken)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return WithAuthenticator(a)
}

// policy is the GitHub approver and read policy of these tests: maria may
// approve; whoever has a role on acme/manifests, as the GitHub test server
// answers GET /repos/{owner}/{repo}/collaborators/{login}/permission, may read.
type policy struct{ gh *githubtest.Server }

// newGitHub is the GitHub of these tests: acme/manifests, on which maria is
// admin and rita has read; mallory has no role.
func newGitHub(t *testing.T) *githubtest.Server {
	t.Helper()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").SetPermission("maria", "admin")
	gh.Repo("acme", "manifests").SetPermission("rita", "read")
	return gh
}

// withGitHub accepts GitHub user tokens of gh, under policy.
func withGitHub(gh *githubtest.Server) []auth.Option {
	return []auth.Option{auth.WithGitHub(gh.URL(), gh.Client()), auth.WithApproverPolicy(policy{gh}), auth.WithReadPolicy(policy{gh}),
		auth.WithLockRule(auth.LockApprovers, "staging", "prod")}
}

func (p policy) MayRead(ctx context.Context, login string) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.gh.URL()+"/repos/acme/manifests/collaborators/"+login+"/permission", nil)
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Authorization", "token "+p.gh.Token())
	resp, err := p.gh.Client().Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	var out struct {
		RoleName string `json:"role_name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return false, "", err
	}
	if out.RoleName == "" || out.RoleName == "none" {
		return false, "@" + login + " has no access to acme/manifests", nil
	}
	return true, out.RoleName + " on acme/manifests", nil
}

func (p policy) MayApprove(_ context.Context, env, login string) (bool, string, error) {
	switch strings.ToLower(login) { // GitHub logins are case-insensitive
	case "maria":
		return true, "admin on acme/manifests", nil
	case "alice", "ci-locker":
		return true, "member of acme/deployers", nil
	}
	return false, "@" + login + " has read on acme/manifests; approving " + env + " needs maintain permission or higher on acme/manifests", nil
}

// TestIdentity: what each kind of credential may do, and that a decision
// records the verified name, never one typed into the request.
func TestIdentity(t *testing.T) {
	gh := newGitHub(t)
	maria, reader := gh.OAuth().UserToken("maria"), gh.OAuth().UserToken("rita")
	pending := &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p"}
	const approve, reject = "/api/v1/environments/prod/approve", "/api/v1/environments/prod/reject"
	tests := []struct {
		name, method, path, token, body string
		wantCode                        int
		wantBody                        string
		wantDecided                     []string
	}{
		{name: "unknown token", method: "GET", path: "/api/v1/environments", token: "not-a-token", wantCode: 401, wantBody: "unknown bearer token"},
		{name: "no token", method: "GET", path: "/api/v1/environments", wantCode: 401, wantBody: "missing bearer token"},
		{name: "viewer reads", method: "GET", path: "/api/v1/environments/prod", token: viewerToken, wantCode: 200},
		{name: "viewer approves", method: "POST", path: approve, token: viewerToken, body: `{"planHash":"sha256:p"}`,
			wantCode: 403, wantBody: "POST /api/v1/environments/prod/approve needs scope approve:prod: viewer (token) lacks scope approve:prod"},
		{name: "viewer locks", method: "POST", path: "/api/v1/locks", token: viewerToken, body: `{"path":"apps/prod","type":"deploy","duration":"1h"}`,
			wantCode: 403, wantBody: "needs scope lock"},
		{name: "staging approver in prod", method: "POST", path: reject, token: stagingToken, body: `{"planHash":"sha256:p"}`,
			wantCode: 403, wantBody: "lacks scope approve:prod"},
		{name: "typed-in approver", method: "POST", path: approve, token: token, body: `{"planHash":"sha256:p","approver":"alice"}`,
			wantCode: 400, wantBody: "approver comes from your credentials: you are token:ops"},
		{name: "own name typed in", method: "POST", path: approve, token: token, body: `{"planHash":"sha256:p","approver":"ops"}`,
			wantCode: 202, wantBody: "approved by token:ops", wantDecided: []string{"approve token:ops"}},
		{name: "own identity typed in", method: "POST", path: approve, token: token, body: `{"planHash":"sha256:p","approver":"token:ops"}`,
			wantCode: 202, wantBody: "approved by token:ops", wantDecided: []string{"approve token:ops"}},
		{name: "own name typed in as another kind", method: "POST", path: approve, token: token, body: `{"planHash":"sha256:p","approver":"github:ops"}`,
			wantCode: 400, wantBody: "you are token:ops"},
		{name: "named token approves", method: "POST", path: approve, token: token, body: `{"planHash":"sha256:p"}`,
			wantCode: 202, wantDecided: []string{"approve token:ops"}},
		{name: "named token rejects", method: "POST", path: reject, token: token, body: `{"planHash":"sha256:p","reason":"no"}`,
			wantCode: 200, wantBody: "rejected by token:ops", wantDecided: []string{"reject token:ops no"}},
		{name: "legacy token reads", method: "GET", path: "/api/v1/environments", token: legacyToken, wantCode: 200},
		{name: "legacy token locks", method: "POST", path: "/api/v1/locks", token: legacyToken, body: `{"path":"apps/prod","type":"deploy","duration":"1h"}`,
			wantCode: 201, wantBody: `"author":"token:api-token"`},
		{name: "legacy token approves", method: "POST", path: approve, token: legacyToken, body: `{"planHash":"sha256:p"}`,
			wantCode: 403, wantBody: "the legacy server.apiTokenFile token can no longer approve or reject: use a named token with approve:prod from server.tokensFile"},
		{name: "legacy token rejects", method: "POST", path: reject, token: legacyToken, body: `{"planHash":"sha256:p"}`, wantCode: 403, wantBody: "server.tokensFile"},
		{name: "GitHub admin approves", method: "POST", path: approve, token: maria, body: `{"planHash":"sha256:p"}`,
			wantCode: 202, wantBody: "approved by github:maria", wantDecided: []string{"approve github:maria"}},
		{name: "GitHub admin cannot approve as another", method: "POST", path: approve, token: maria, body: `{"planHash":"sha256:p","approver":"ops"}`,
			wantCode: 400, wantBody: "you are github:maria"},
		{name: "GitHub reader approves", method: "POST", path: approve, token: reader, body: `{"planHash":"sha256:p"}`,
			wantCode: 403, wantBody: "@rita has read on acme/manifests; approving prod needs maintain permission or higher"},
		// A token acting for a person approves only where that person's login would be allowed.
		{name: "token for the GitHub admin approves", method: "POST", path: approve, token: mariaCLIToken, body: `{"planHash":"sha256:p"}`,
			wantCode: 202, wantBody: "approved by token:maria-cli", wantDecided: []string{"approve token:maria-cli (for github:maria)"}},
		{name: "token for the GitHub reader approves", method: "POST", path: approve, token: ritaCLIToken, body: `{"planHash":"sha256:p"}`,
			wantCode: 403, wantBody: "token:rita-cli acts for github:rita, who may not approve in prod: @rita has read on acme/manifests"},
		{name: "GitHub reader reads", method: "GET", path: "/api/v1/environments/prod/history", token: reader, wantCode: 200},
		{name: "unknown GitHub token", method: "GET", path: "/api/v1/environments", token: "ghp_" + strings.Repeat("x", 36), wantCode: 401, wantBody: "GitHub does not accept this token"},
		// A GitHub login spelled like a name Stagehand uses for itself is refused outright, naming the rule.
		{name: "GitHub login named rollback", method: "GET", path: "/api/v1/environments", token: gh.OAuth().UserToken("rollback"), wantCode: 403,
			wantBody: "github:rollback is refused: Stagehand uses the names stagehand, stagehand-reconciler, api-token, skipConfirmation, rollback"},
		{name: "GitHub login named stagehand-reconciler", method: "POST", path: "/api/v1/locks", token: gh.OAuth().UserToken("Stagehand-Reconciler"),
			body: `{"path":"apps/prod","type":"deploy","duration":"1h"}`, wantCode: 403, wantBody: "github:Stagehand-Reconciler is refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := lock.New(lock.NewMemory())
			if err != nil {
				t.Fatal(err)
			}
			b := &backend{pending: pending, locks: svc}
			persons := auth.WithTokens(
				auth.Token{Name: "maria-cli", Token: mariaCLIToken, Scopes: []string{"approve:*"}, ActsFor: "github:maria"},
				auth.Token{Name: "rita-cli", Token: ritaCLIToken, Scopes: []string{"approve:*"}, ActsFor: "github:rita"})
			srv := newServer(t, b, withOps(t, append(withGitHub(gh), persons)...))
			code, body := call(t, srv, tc.method, tc.path, tc.token, tc.body)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s %s = %d %s, want %d containing %q", tc.method, tc.path, code, body, tc.wantCode, tc.wantBody)
			}
			if diff := cmp.Diff(tc.wantDecided, b.decided); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// Tokens acting for the GitHub users maria (who may approve) and rita (who may not), both with approve:*.
const (
	mariaCLIToken = "maria-cli-test-token-01"
	ritaCLIToken  = "rita-cli-test-token-001"
)

// TestGitHubTokensWithoutGitHub: without GitHub configured, a GitHub user
// token is refused, saying why.
func TestGitHubTokensWithoutGitHub(t *testing.T) {
	srv := newServer(t, &backend{}, withOps(t))
	code, body := call(t, srv, "GET", "/api/v1/environments", "gho_"+strings.Repeat("a", 36), "")
	if code != 401 || !strings.Contains(body, "GitHub user tokens are not accepted: this reconciler has no GitHub configured") {
		t.Errorf("= %d %s", code, body)
	}
}

// TestGitHubUserCached: the login of a GitHub token is asked of GitHub
// once, not on every request, and a rejected token is remembered too.
func TestGitHubUserCached(t *testing.T) {
	gh := newGitHub(t)
	tok := gh.OAuth().UserToken("maria")
	srv := newServer(t, &backend{}, withOps(t, withGitHub(gh)...))
	for range 5 {
		if code, body := call(t, srv, "GET", "/api/v1/environments", tok, ""); code != 200 {
			t.Fatalf("= %d %s", code, body)
		}
	}
	bad := "ghp_" + strings.Repeat("b", 36)
	for range 3 {
		if code, _ := call(t, srv, "GET", "/api/v1/environments", bad, ""); code != 401 {
			t.Fatalf("bad token = %d", code)
		}
	}
	if n := gh.CountRequests("GET", "/user"); n != 2 {
		t.Errorf("GET /user asked %d times for 8 requests with 2 tokens, want 2", n)
	}
}

// TestTokensFileRotation: a token rotated in the mounted file is refused,
// and its successor accepted, without a restart.
func TestTokensFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	write := func(tok string) {
		t.Helper()
		// As the kubelet updates a mounted Secret: a new file renamed over the old.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte("- name: ci-deployer\n  token: "+tok+"\n  scopes: [read, \"approve:staging\"]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	const old, fresh = "old-ci-token-000000001", "new-ci-token-000000002"
	write(old)
	a, err := auth.New(auth.WithTokensFile(path), auth.WithReloadInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, &backend{}, WithAuthenticator(a))
	if code, body := call(t, srv, "GET", "/api/v1/environments", old, ""); code != 200 {
		t.Fatalf("old token before the rotation = %d %s", code, body)
	}
	write(fresh)
	deadline := time.Now().Add(5 * time.Second)
	for {
		oldCode, _ := call(t, srv, "GET", "/api/v1/environments", old, "")
		newCode, _ := call(t, srv, "GET", "/api/v1/environments", fresh, "")
		if oldCode == 401 && newCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the rotation: old token %d, new token %d; want 401 and 200", oldCode, newCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A broken edit keeps the tokens read before.
	if err := os.WriteFile(path, []byte("- name: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if code, body := call(t, srv, "GET", "/api/v1/environments", fresh, ""); code != 200 {
		t.Errorf("after a broken edit the last good token = %d %s, want 200", code, body)
	}
}

// TestLocksBelongToSomeone: over the API, a lock's author is the verified
// principal; another principal's unlock is 403, lock:admin's succeeds, and
// the reconciler's own apply lock cannot be removed with a lock token.
func TestLocksBelongToSomeone(t *testing.T) {
	mem := lock.NewMemory()
	svc, err := lock.New(mem)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, &backend{locks: svc}, withOps(t))
	if code, body := call(t, srv, "POST", "/api/v1/locks", lockerToken, `{"path":"apps/prod/a","type":"deploy","author":"someone-else","duration":"1h"}`); code != 201 || !strings.Contains(body, `"author":"token:ci-locker"`) {
		t.Fatalf("ci-locker locks = %d %s", code, body)
	}
	if _, err := svc.Lock(context.Background(), lock.Lock{Path: "apps/prod/b", Type: lock.Deploy, Author: lock.ReservedAuthor, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, path string
		wantCode          int
		wantBody          string
	}{
		{"another principal", legacyToken, "/api/v1/locks/apps/prod/a?type=deploy", 403, "token:api-token may remove only their own locks"},
		{"the reconciler's apply lock", lockerToken, "/api/v1/locks/apps/prod/b?type=deploy", 403, "deploy by stagehand-reconciler"},
		{"a reader", viewerToken, "/api/v1/locks/apps/prod/a?type=deploy", 403, "needs scope lock"},
		{"the author", lockerToken, "/api/v1/locks/apps/prod/a?type=deploy", 200, `"author": "token:ci-locker"`},
		{"lock:admin", adminToken, "/api/v1/locks/apps/prod/b?type=deploy", 200, "stagehand-reconciler"},
	} {
		if code, body := call(t, srv, "DELETE", tc.path, tc.token, ""); code != tc.wantCode || !strings.Contains(strings.ReplaceAll(body, `":"`, `": "`), tc.wantBody) {
			t.Errorf("%s: DELETE %s = %d %s, want %d containing %q", tc.name, tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
	want := []string{"deploy lock apps/prod/b of stagehand-reconciler unlocked by token:oncall (lock:admin)"}
	if diff := cmp.Diff(want, mem.Unlocks()); diff != "" {
		t.Errorf("recorded unlocks (-want +got):\n%s", diff)
	}
}

var _ = http.StatusOK
