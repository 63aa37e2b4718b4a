package wire

import (
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
)

// GitHub returns the GitHub client of github: (nil without github.app,
// WithGitHubToken or WithAnonymousGitHub): over HTTPTransport, with every environment's approvals:
// policy, on GitHub's clock followed from this host's (WithLocalClock), then
// WithGitHubOptions.
func (b *Builder) GitHub() (*github.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.githubLocked()
}

func (b *Builder) githubLocked() (*github.Client, error) {
	if b.ghDone {
		return b.gh, nil
	}
	if b.cfg.GitHub.App == nil && b.o.githubToken == "" && !b.o.githubAnonymous {
		b.ghDone = true
		return nil, nil
	}
	rt, err := b.transportLocked()
	if err != nil {
		return nil, err
	}
	policies := map[string]config.Approvals{}
	for _, env := range b.cfg.EnvironmentNames() {
		policies[env] = b.cfg.ApprovalPolicy(env)
	}
	opts := []github.Option{github.WithTransport(rt), github.WithApprovals(policies), github.WithClock(b.o.localNow())}
	if b.o.githubToken != "" {
		opts = append(opts, github.WithToken(b.o.githubToken))
	}
	if b.o.githubAnonymous {
		opts = append(opts, github.WithAnonymous())
	}
	gh, err := github.New(b.cfg.GitHub, append(opts, b.o.githubOpts...)...)
	if err != nil {
		return nil, err
	}
	b.gh, b.ghDone = gh, true
	return gh, nil
}
