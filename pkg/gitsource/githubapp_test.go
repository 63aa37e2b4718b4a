package gitsource_test

import (
	"context"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// installationTokenCheck accepts user x-access-token with a token the GitHub
// test server honours (issued to the app's installation and not expired).
func installationTokenCheck(gh *githubtest.Server) func(user, secret string) bool {
	return func(user, secret string) bool { return user == "x-access-token" && gh.ValidToken(secret) }
}

func TestPollGitHubAppToken(t *testing.T) {
	tests := []struct {
		name       string
		ttl        time.Duration
		wantTokens int // after two polls
	}{
		{name: "token reused while valid", ttl: time.Hour, wantTokens: 1},
		{name: "token refreshed before expiry", ttl: 30 * time.Second, wantTokens: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := githubtest.New(t, githubtest.WithTokenTTL(tt.ttl))
			gh.CreateRepo("acme", "manifests", "main")
			srv := gitserver.New(t, gitserver.WithCredentialCheck(installationTokenCheck(gh)))
			url, first := seed(t, srv)

			cfg := sourceConfig(url)
			cfg.Auth.GitHubApp = &config.GitHubApp{
				AppID: gh.AppID(), InstallationID: gh.InstallationID(),
				PrivateKeyFile: writeFile(t, t.TempDir(), "app.pem", string(gh.AppPrivateKeyPEM())),
			}
			s := newSource(t, cfg, gitsource.WithGitHubAPIURL(gh.URL()), gitsource.WithTransport(gh.Client().Transport))
			if snap := poll(t, s); snap.Revision != first {
				t.Fatalf("revision = %s, want %s", snap.Revision, first)
			}
			second := srv.Commit(t, "manifests", "main", map[string]string{"b.json": "b"}, "second")
			if snap := poll(t, s); snap.Revision != second {
				t.Fatalf("revision = %s, want %s", snap.Revision, second)
			}
			if got := gh.TokensIssued(); got != tt.wantTokens {
				t.Errorf("installation tokens issued = %d, want %d", got, tt.wantTokens)
			}
		})
	}
}

func TestPollGitHubAppWrongInstallation(t *testing.T) {
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	srv := gitserver.New(t, gitserver.WithCredentialCheck(installationTokenCheck(gh)))
	url, _ := seed(t, srv)
	cfg := sourceConfig(url)
	cfg.Auth.GitHubApp = &config.GitHubApp{
		AppID: gh.AppID(), InstallationID: gh.InstallationID() + 1,
		PrivateKeyFile: writeFile(t, t.TempDir(), "app.pem", string(gh.AppPrivateKeyPEM())),
	}
	s := newSource(t, cfg, gitsource.WithGitHubAPIURL(gh.URL()))
	if _, err := s.Poll(context.Background()); err == nil {
		t.Fatal("Poll with an unknown installation succeeded")
	}
	if got := srv.Requests(); got.InfoRefs != 0 || got.Unauthorized != 0 {
		t.Errorf("git requests = %+v, want none without a token", got)
	}
}
