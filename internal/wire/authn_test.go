package wire_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// The authenticator is built once per process by the builder: the same one
// for every caller, its GitHub user-token checks over the builder's one
// transport to GitHub, and its read rule the access cache the web page
// shares.
func TestBuilderBuildsTheAuthenticatorOnce(t *testing.T) {
	cfg := builderConfig(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(tokens, []byte("- {name: ci, token: ci-token-0000000000001, scopes: [read]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Server.TokensFile = tokens
	cfg.GitHub = config.GitHub{APIURL: "https://ghe.example.com/api/v3/", Owner: "acme", Repo: "manifests",
		App: &config.GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: writeKey(t)}, Approvers: config.Approvers{MinPermission: "write"}}
	rt := &recordingTransport{}
	b := newBuilder(t, cfg, wire.WithHTTPTransport(rt), wire.WithGitHubOptions(github.WithRetry(github.RetryPolicy{MaxAttempts: 1})))
	a, err := b.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Authenticator()
	if err != nil || again != a {
		t.Errorf("Authenticator built twice (%p, %p, %v)", a, again, err)
	}
	ctx := context.Background()
	p, err := a.Authenticate(ctx, "ci-token-0000000000001")
	if err != nil || p.Name != "ci" {
		t.Errorf("a named token of server.tokensFile: %+v, %v", p, err)
	}
	if _, err := a.Authenticate(ctx, "ghp_"+strings.Repeat("a", 36)); err == nil {
		t.Error("a GitHub user token was accepted while GitHub answers nothing")
	}
	if rt.count("/api/v3/user") == 0 {
		t.Errorf("paths through the builder's transport: %v; want the user token checked with GET /user", rt.paths)
	}
	if diff := cmp.Diff([]string{"ghe.example.com"}, rt.hostsSeen()); diff != "" {
		t.Errorf("hosts reached (-want +got):\n%s", diff)
	}
	one, err := b.Access()
	if err != nil || one == nil {
		t.Fatalf("Access = %v, %v; want the GitHub rule", one, err)
	}
	two, _ := b.Access()
	if reflect.ValueOf(one).Pointer() != reflect.ValueOf(two).Pointer() {
		t.Error("Access built twice: the page and the API would each ask GitHub")
	}
}

// Without GitHub there is no access rule, and the authenticator still
// takes the configured tokens.
func TestBuilderAuthenticatorWithoutGitHub(t *testing.T) {
	cfg := builderConfig(t)
	legacy := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(legacy, []byte("legacy-token-000000001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Server.APITokenFile = legacy
	b := newBuilder(t, cfg)
	if acc, err := b.Access(); err != nil || acc != nil {
		t.Errorf("Access without github.app = %v, %v; want none", acc, err)
	}
	a, err := b.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), "legacy-token-000000001"); err != nil {
		t.Errorf("the legacy token: %v", err)
	}
	cfg.Locks.Rule = "no such rule"
	if _, err := newBuilder(t, cfg).Authenticator(); err == nil || !strings.Contains(err.Error(), "locks.rule") {
		t.Errorf("a bad locks.rule: %v, want an error naming the key", err)
	}
}
