package wire

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/ghapp"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// appTokenSource returns the installation tokens of a GitHub App, minted at
// apiURL (empty: api.github.com) over rt and renewed a minute before they
// expire; between renewals the same token is returned. The App's JWT and
// the renewals follow GitHub's clock from the answers to the token requests,
// starting from local (this host's clock): see internal/ghapp.
func appTokenSource(app config.GitHubApp, apiURL string, rt http.RoundTripper, local func() time.Time) (gitsource.TokenSource, error) {
	if app.AppID == 0 || app.InstallationID == 0 || app.PrivateKeyFile == "" {
		return nil, fmt.Errorf("source.auth.githubApp: appID, installationID and privateKeyFile are required")
	}
	key, err := os.ReadFile(app.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("source.auth.githubApp: loading private key %s: %w", app.PrivateKeyFile, err)
	}
	opts := []ghapp.Option{ghapp.WithClock(clock.NewRemote(local))}
	if apiURL != "" {
		opts = append(opts, ghapp.WithAPIURL(apiURL))
	}
	tr, err := ghapp.New(rt, ghapp.Installation{AppID: app.AppID, InstallationID: app.InstallationID, Key: key}, opts...)
	if err != nil {
		return nil, fmt.Errorf("source.auth.githubApp: private key %s: %w", app.PrivateKeyFile, err)
	}
	return func(ctx context.Context) (string, error) {
		tok, err := tr.Token(ctx)
		if err != nil {
			return "", fmt.Errorf("getting GitHub App installation token: %w", err)
		}
		return tok, nil
	}, nil
}
