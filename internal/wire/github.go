package wire

import (
	"net/http"
	"sync"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
)

// gitHubParts are a process's ways to GitHub, each built once: the HTTP
// transport, the GitHub client over it, the access rule that asks it and
// the authenticator of the API's callers (whose Kubernetes tokens are
// reviewed through kube's clients).
type gitHubParts struct {
	cfg  *config.Config
	o    *options
	kube *kubeParts

	mu        sync.Mutex
	transport http.RoundTripper
	gh        *github.Client
	ghDone    bool
	access    auth.AccessPolicy
	authn     *auth.Authenticator
}

// HTTPTransport returns the process's transport to GitHub (the REST API,
// the App token exchange of the git source, user-token checks and the web
// page's OAuth): WithHTTPTransport's, else HTTPTransport(source), which
// trusts source.caFile. One transport keeps one pool of connections.
func (g *gitHubParts) HTTPTransport() (http.RoundTripper, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.transportLocked()
}

func (g *gitHubParts) transportLocked() (http.RoundTripper, error) {
	if g.transport != nil {
		return g.transport, nil
	}
	rt := g.o.httpTransport
	if rt == nil {
		var err error
		if rt, err = HTTPTransport(g.cfg.Source); err != nil {
			return nil, err
		}
	}
	g.transport = rt
	return rt, nil
}

// GitHub returns the GitHub client of github: (nil without github.app,
// WithGitHubToken or WithAnonymousGitHub): over HTTPTransport, with every environment's approvals:
// policy, on GitHub's clock followed from this host's (WithLocalClock), then
// WithGitHubOptions.
func (g *gitHubParts) GitHub() (*github.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.githubLocked()
}

func (g *gitHubParts) githubLocked() (*github.Client, error) {
	if g.ghDone {
		return g.gh, nil
	}
	if g.cfg.GitHub.App == nil && g.o.githubToken == "" && !g.o.githubAnonymous {
		g.ghDone = true
		return nil, nil
	}
	rt, err := g.transportLocked()
	if err != nil {
		return nil, err
	}
	policies := map[string]config.Approvals{}
	for _, env := range g.cfg.EnvironmentNames() {
		policies[env] = g.cfg.ApprovalPolicy(env)
	}
	opts := []github.Option{github.WithTransport(rt), github.WithApprovals(policies), github.WithClock(g.o.localNow())}
	if g.o.githubToken != "" {
		opts = append(opts, github.WithToken(g.o.githubToken))
	}
	if g.o.githubAnonymous {
		opts = append(opts, github.WithAnonymous())
	}
	gh, err := github.New(g.cfg.GitHub, append(opts, g.o.githubOpts...)...)
	if err != nil {
		return nil, err
	}
	g.gh, g.ghDone = gh, true
	return gh, nil
}
