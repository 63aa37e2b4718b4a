package prbot

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// LockChecker reports the locks that forbid an action of type lockType
// ("deploy") at path, checking every prefix (pkg/lock/lockapi's REST client and
// pkg/reconcile's LockChecker have this shape).
type LockChecker interface {
	Blocking(ctx context.Context, path, lockType string) ([]string, error)
}

// Freezes says whether an environment's deploy windows are closed now, and why ("": open): the
// reconciler's view of it (GET /api/v1/environments/{env}, windows).
type Freezes interface {
	Frozen(ctx context.Context, env string) (string, error)
}

// Bot acts on one manifests repository. It is what the commands build and
// serve; each of its flows is a small type of its own: bumps (bumper,
// bump.go), promotions (promotions, promote.go) and rollbacks (rollbacks,
// rollback.go). They share the repository as internal/prbot/remote reaches
// it on GitHub (its branches and files, pull requests, check runs), the
// locks and holds that stop a pull request (lockGate, lockrules.go) and the
// merges (merger, merge.go).
type Bot struct {
	repo          *remote.Repository
	bumps         *bumper
	promotions    *promotions
	rollbacks     *rollbacks
	upstreamOwner string
	now           func() time.Time
	tracer        trace.Tracer
}

type options struct {
	tracer        trace.Tracer
	base, root    string
	locks         LockChecker
	freezes       Freezes
	webURL        string
	upstreamOwner string
	now           func() time.Time
	poll          time.Duration
	depth         int
	mergeMethod   string
	requireCheck  []string
	manifestOpts  []manifest.Option
}

// Option configures a Bot.
type Option func(*options) error

// WithBase sets the base branch of the manifests repository (default "main").
func WithBase(branch string) Option {
	return func(o *options) error { o.base = branch; return nil }
}

// WithRoot sets the directory holding environments/ and pipeline.yaml (default ".").
func WithRoot(root string) Option {
	return func(o *options) error { o.root = root; return nil }
}

// WithFreezes makes the bot hold promotions into a stage whose deploy windows are closed.
func WithFreezes(f Freezes) Option {
	return func(o *options) error { o.freezes = f; return nil }
}

// WithLocks makes the bot consult locks before opening and merging.
func WithLocks(l LockChecker) Option {
	return func(o *options) error { o.locks = l; return nil }
}

// WebRoot derives the web root from an API URL: api.github.com → https://github.com,
// https://ghe/api/v3 → https://ghe.
func WebRoot(apiURL string) string {
	u, err := url.Parse(apiURL)
	if apiURL == "" || err != nil || u.Host == "" {
		return "https://github.com"
	}
	if u.Host == "api.github.com" {
		return "https://github.com"
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/api/v3")
}

// WithWebURL sets the GitHub web root used in compare links (default https://github.com).
func WithWebURL(u string) Option {
	return func(o *options) error { o.webURL = u; return nil }
}

// WithUpstreamOwner sets the organisation of the upstream repositories named
// by the ownership convention (default: the manifests repository's owner).
func WithUpstreamOwner(owner string) Option {
	return func(o *options) error { o.upstreamOwner = owner; return nil }
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) error { o.now = now; return nil }
}

// WithPollInterval sets how often an auto-merge re-reads checks and locks (default 10s).
func WithPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("setting poll interval: %s is not positive", d)
		}
		o.poll = d
		return nil
	}
}

// WithHistoryDepth sets how many commits of the base branch a promotion looks
// back through for the earlier stage's successful check (default 50).
func WithHistoryDepth(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting history depth: %d is less than 1", n)
		}
		o.depth = n
		return nil
	}
}

// WithMergeMethod sets how pull requests are merged: merge, squash or rebase (default merge).
func WithMergeMethod(m string) Option {
	return func(o *options) error {
		switch m {
		case "merge", "squash", "rebase":
			o.mergeMethod = m
			return nil
		}
		return fmt.Errorf("setting merge method: %q is not merge, squash or rebase", m)
	}
}

// WithRequiredChecks names check runs (or commit status contexts) that must
// have succeeded on a pull request's head before the bot merges it. Any other
// check present must not be pending or failing either.
func WithRequiredChecks(names ...string) Option {
	return func(o *options) error { o.requireCheck = append(o.requireCheck, names...); return nil }
}

// WithManifestOptions sets how the bot reads and edits manifest files (default
// none: strict, an unknown key is an error naming the file and the key, as
// for the reconciler). internal/wire.ManifestOptions turns a manifest:
// configuration section into these.
func WithManifestOptions(opts ...manifest.Option) Option {
	return func(o *options) error { o.manifestOpts = append(o.manifestOpts, opts...); return nil }
}

// New returns a bot for owner/repo that talks to GitHub through gh.
func New(gh *github.Client, owner, repo string, opts ...Option) (*Bot, error) {
	o := options{base: "main", root: ".", now: time.Now, poll: 10 * time.Second, depth: 50, mergeMethod: "merge"}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	switch {
	case gh == nil:
		return nil, errors.New("creating prbot: no GitHub client")
	case owner == "" || repo == "" || strings.Contains(owner, "/") || strings.Contains(repo, "/"):
		return nil, fmt.Errorf("creating prbot: repository %q/%q: want OWNER/NAME", owner, repo)
	case o.base == "":
		return nil, errors.New("creating prbot: empty base branch")
	}
	if o.upstreamOwner == "" {
		o.upstreamOwner = owner
	}
	r, err := remote.New(gh, owner, repo, remote.WithBase(o.base), remote.WithRoot(o.root), remote.WithManifestOptions(o.manifestOpts...))
	if err != nil {
		return nil, fmt.Errorf("creating prbot: %w", err)
	}
	return compose(r, o), nil
}

// compose builds the bot's parts on the repository r from checked options.
func compose(r *remote.Repository, o options) *Bot {
	pulls := &remote.Pulls{Repo: r}
	checks := &remote.Checks{Repo: r, Now: o.now, Required: o.requireCheck}
	branches := &remote.Branches{Repo: r}
	gate := &lockGate{locks: o.locks, repo: r}
	merge := &merger{pulls: pulls, checks: checks, gate: gate, method: o.mergeMethod, poll: o.poll, now: o.now}
	links := promote.Links{WebURL: o.webURL, Owner: o.upstreamOwner}
	return &Bot{
		repo:  r,
		bumps: &bumper{repo: r, branches: branches, pulls: pulls, checks: checks, gate: gate, merge: merge},
		promotions: &promotions{repo: r, branches: branches, pulls: pulls, checks: checks, gate: gate, merge: merge,
			freezes: o.freezes, links: links, now: o.now, depth: o.depth},
		rollbacks:     &rollbacks{repo: r, branches: branches, pulls: pulls, checks: checks, links: links, depth: o.depth},
		upstreamOwner: o.upstreamOwner,
		now:           o.now,
		tracer:        tracerOf(o),
	}
}

// ErrConflict is a write refused because someone else wrote the file first
// (remote.ErrConflict: a bump's write of its file, eight times in a row).
var ErrConflict = remote.ErrConflict
