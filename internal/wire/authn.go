package wire

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
)

// accessTTL is how long an answer of the GitHub access rule is reused per
// login and environment.
const accessTTL = time.Minute

// WithAuthLog is where the authenticator logs (tokens file reloads, GitHub
// and TokenReview failures); silent by default.
func WithAuthLog(log logr.Logger) Option {
	return func(o *options) error { o.authLog = log; return nil }
}

// Access returns who may read and approve by the GitHub App's rule (nil
// without a GitHub client): whoever may approve in env (github.approvers and
// the environment's policy; env "" is github.approvers) reads and approves,
// anyone else with a role on the repository reads. GitHub is asked at most
// once a minute per login and environment, by one cache per process that
// the web page and the API's read rule share.
func (g *gitHubParts) Access() (auth.AccessPolicy, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accessLocked()
}

func (g *gitHubParts) accessLocked() (auth.AccessPolicy, error) {
	if g.access != nil {
		return g.access, nil
	}
	gh, err := g.githubLocked()
	if err != nil || gh == nil {
		return nil, err
	}
	g.access = auth.CachedAccess(gitHubAccess(gh), accessTTL, time.Now)
	return g.access, nil
}

// gitHubAccess is the GitHub client's approver and read rules as one
// AccessPolicy.
func gitHubAccess(gh *github.Client) auth.AccessPolicy {
	return func(ctx context.Context, login, env string) (auth.Access, error) {
		ap, err := gh.Approvers().MayApprove(ctx, env, login)
		if err != nil {
			return auth.Access{}, err
		}
		if ap.Allowed {
			return auth.Access{Read: true, Approve: true, Why: ap.Why}, nil
		}
		rd, err := gh.Approvers().MayRead(ctx, login)
		if err != nil {
			return auth.Access{}, err
		}
		why := ap.Why
		if !rd.Allowed {
			why = rd.Why
		}
		return auth.Access{Read: rd.Allowed, Why: why}, nil
	}
}

// approverPolicy is the GitHub client's approver rule, as internal/auth asks it.
type approverPolicy struct{ gh *github.Client }

func (p approverPolicy) MayApprove(ctx context.Context, env, login string) (bool, string, error) {
	d, err := p.gh.Approvers().MayApprove(ctx, env, login)
	if err != nil {
		return false, "", err
	}
	return d.Allowed, d.Why, nil
}

// Authenticator returns the verifier of the API's callers, built once:
// named tokens (server.tokensFile), the legacy token (server.apiTokenFile),
// GitHub user tokens when there is a GitHub client (checked over
// HTTPTransport, approvals by the GitHub rule, reads by Access), Kubernetes
// tokens with server.kubernetesAuth (TokenReviews through the state
// cluster's cached client), and locks.rule.
func (g *gitHubParts) Authenticator() (*auth.Authenticator, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.authn != nil {
		return g.authn, nil
	}
	cfg := g.cfg
	opts := []auth.Option{auth.WithLog(g.o.authLog), auth.WithLegacyTokenFile(cfg.Server.APITokenFile),
		auth.WithBreakGlass(cfg.BreakGlassScopes)}
	if cfg.Server.TokensFile != "" {
		opts = append(opts, auth.WithTokensFile(cfg.Server.TokensFile))
	}
	gh, err := g.githubLocked()
	if err != nil {
		return nil, err
	}
	if gh != nil {
		tr, err := g.transportLocked()
		if err != nil {
			return nil, err
		}
		access, err := g.accessLocked()
		if err != nil {
			return nil, err
		}
		opts = append(opts, auth.WithGitHub(GitHubAPIBase(cfg.GitHub.APIURL), &http.Client{Transport: tr, Timeout: 10 * time.Second}),
			auth.WithApproverPolicy(approverPolicy{gh}), auth.WithReadPolicy(access))
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
		clients, err := g.kube.Clients()
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
	a, err := auth.New(opts...)
	if err != nil {
		return nil, err
	}
	g.authn = a
	return a, nil
}

// GitHubAPIBase is the REST base URL for github.apiURL, as the GitHub client
// uses it: https://api.github.com by default, /api/v3 on an Enterprise Server.
func GitHubAPIBase(apiURL string) string {
	u := strings.TrimRight(apiURL, "/")
	switch {
	case u == "":
		return "https://api.github.com"
	case strings.HasSuffix(u, "/api/v3") || strings.Contains(u, "://api."):
		return u
	}
	return u + "/api/v3"
}
