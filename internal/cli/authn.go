package cli

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/ui"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// authenticator verifies the callers of the API as the server: keys say:
// named tokens, the legacy token, GitHub user tokens when the GitHub client
// gh is configured, Kubernetes tokens when server.kubernetesAuth is true.
// The GitHub token checks go over the builder's one transport to GitHub, the
// TokenReviews through its cached client of the state cluster.
func authenticator(b *wire.Builder, gh *github.Client, log logr.Logger) (*auth.Authenticator, error) {
	cfg := b.Config()
	opts := []auth.Option{auth.WithLog(log), auth.WithLegacyTokenFile(cfg.Server.APITokenFile)}
	if cfg.Server.TokensFile != "" {
		opts = append(opts, auth.WithTokensFile(cfg.Server.TokensFile))
	}
	if gh != nil {
		tr, err := b.HTTPTransport()
		if err != nil {
			return nil, err
		}
		opts = append(opts, auth.WithGitHub(gitHubAPIBase(cfg.GitHub.APIURL), &http.Client{Transport: tr, Timeout: 10 * time.Second}),
			auth.WithApproverPolicy(approverPolicy{gh}),
			// Reading over the API follows the web page's rule, asked of GitHub at most once a minute per login.
			auth.WithReadPolicy(readPolicy{ui.CachedPolicy(pageAccess(gh), time.Minute, time.Now)}))
	}
	rule, err := auth.ParseLockRule(cfg.Locks.Rule)
	if err != nil {
		return nil, fmt.Errorf("locks.rule: %w", err)
	}
	envs := make([]string, 0, len(cfg.Environments))
	for name := range cfg.Environments {
		envs = append(envs, name)
	}
	sort.Strings(envs)
	opts = append(opts, auth.WithLockRule(rule, envs...))
	if cfg.Server.KubernetesAuth {
		clients, err := b.Clients()
		if err != nil {
			return nil, err
		}
		c, err := clients.Client(cfg.State.Kubeconfig, cfg.State.Context)
		if err != nil {
			return nil, fmt.Errorf("server.kubernetesAuth: %w", err)
		}
		opts = append(opts, auth.WithKubernetes(c, cfg.State.Namespace), auth.WithKubernetesAudience(cfg.Server.KubernetesAudience),
			auth.WithKubernetesActsFor(cfg.Server.KubernetesActsFor))
	}
	return auth.New(opts...)
}

// gitHubAPIBase is the REST base URL for github.apiURL, as the GitHub client
// uses it: https://api.github.com by default, /api/v3 on an Enterprise Server.
func gitHubAPIBase(apiURL string) string {
	u := strings.TrimRight(apiURL, "/")
	switch {
	case u == "":
		return "https://api.github.com"
	case strings.HasSuffix(u, "/api/v3") || strings.Contains(u, "://api."):
		return u
	}
	return u + "/api/v3"
}

// approverPolicy is the GitHub client's approver rule, as internal/auth asks it.
type approverPolicy struct{ gh *github.Client }

// readPolicy is the web page's read rule (pageAccess), as internal/auth asks it.
type readPolicy struct{ page ui.Policy }

func (p readPolicy) MayRead(ctx context.Context, login string) (bool, string, error) {
	acc, err := p.page(ctx, login, "")
	if err != nil {
		return false, "", err
	}
	return acc.Read, acc.Why, nil
}

func (p approverPolicy) MayApprove(ctx context.Context, env, login string) (bool, string, error) {
	d, err := p.gh.MayApprove(ctx, env, login)
	if err != nil {
		return false, "", err
	}
	return d.Allowed, d.Why, nil
}
