package wire

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// appTokenSource returns the installation tokens of a GitHub App, minted at
// apiURL (empty: api.github.com) over rt and refreshed by ghinstallation
// before they expire; between refreshes the same token is returned.
func appTokenSource(app config.GitHubApp, apiURL string, rt http.RoundTripper) (gitsource.TokenSource, error) {
	if app.AppID == 0 || app.InstallationID == 0 || app.PrivateKeyFile == "" {
		return nil, fmt.Errorf("source.auth.githubApp: appID, installationID and privateKeyFile are required")
	}
	tr, err := ghinstallation.NewKeyFromFile(rt, app.AppID, app.InstallationID, app.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("source.auth.githubApp: loading private key %s: %w", app.PrivateKeyFile, err)
	}
	if apiURL != "" {
		tr.BaseURL = strings.TrimRight(apiURL, "/")
	}
	return func(ctx context.Context) (string, error) {
		tok, err := tr.Token(ctx)
		if err != nil {
			return "", fmt.Errorf("getting GitHub App installation token: %w", err)
		}
		return tok, nil
	}, nil
}
