package prbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"
	"go.opentelemetry.io/otel/trace"

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

// Bot acts on one manifests repository.
type Bot struct {
	gh           *github.Client
	owner, repo  string
	base         string
	root         string
	locks        LockChecker
	freezes      Freezes
	links        promote.Links
	now          func() time.Time
	poll         time.Duration
	depth        int
	mergeMethod  string
	requireCheck []string
	manifestOpts []manifest.Option
	blobs        *blobCache
	tracer       trace.Tracer
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
	return &Bot{
		gh: gh, owner: owner, repo: repo, base: o.base, root: strings.Trim(o.root, "/"), locks: o.locks, freezes: o.freezes,
		links: promote.Links{WebURL: o.webURL, Owner: o.upstreamOwner}, now: o.now, poll: o.poll, depth: o.depth,
		mergeMethod: o.mergeMethod, requireCheck: o.requireCheck, manifestOpts: o.manifestOpts, blobs: &blobCache{m: map[string][]byte{}},
		tracer: tracerOf(o),
	}, nil
}

// path joins the repository root and a path below it.
func (b *Bot) path(p string) string {
	if b.root == "" || b.root == "." {
		return p
	}
	return b.root + "/" + p
}

// headRef returns the commit a branch points at ("" when the branch does not exist).
func (b *Bot) headRef(ctx context.Context, branch string) (string, error) {
	ref, _, err := b.gh.Git.GetRef(ctx, b.owner, b.repo, "heads/"+branch)
	if isStatus(err, http.StatusNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading branch %s: %w", branch, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// setRef points branch at sha, creating it when missing.
func (b *Bot) setRef(ctx context.Context, branch, sha string, force bool) error {
	_, _, err := b.gh.Git.UpdateRef(ctx, b.owner, b.repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}}, force)
	if err != nil {
		return fmt.Errorf("moving branch %s to %s: %w", branch, sha, err)
	}
	return nil
}

// createRef creates branch at sha; created is false when it already existed.
func (b *Bot) createRef(ctx context.Context, branch, sha string) (created bool, err error) {
	_, _, err = b.gh.Git.CreateRef(ctx, b.owner, b.repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}})
	if isStatus(err, http.StatusUnprocessableEntity) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	return true, nil
}

// file reads path at ref: its content and blob sha (nil, "" when absent).
func (b *Bot) file(ctx context.Context, path, ref string) ([]byte, string, error) {
	fc, _, _, err := b.gh.Repositories.GetContents(ctx, b.owner, b.repo, path, &github.RepositoryContentGetOptions{Ref: ref})
	if isStatus(err, http.StatusNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading %s at %s: %w", path, ref, err)
	}
	if fc == nil {
		return nil, "", fmt.Errorf("reading %s at %s: a directory, not a file", path, ref)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, "", fmt.Errorf("decoding %s at %s: %w", path, ref, err)
	}
	return []byte(s), fc.GetSHA(), nil
}

// putFile writes content to path on branch; sha is the blob being replaced
// ("" to create). A conflict (someone else wrote first) matches ErrConflict.
func (b *Bot) putFile(ctx context.Context, branch, path, sha, message string, content []byte) (string, error) {
	opts := &github.RepositoryContentFileOptions{Message: github.String(message), Content: content, Branch: github.String(branch)}
	if sha != "" {
		opts.SHA = github.String(sha)
	}
	res, _, err := b.gh.Repositories.UpdateFile(ctx, b.owner, b.repo, path, opts)
	if isStatus(err, http.StatusConflict) || isStatus(err, http.StatusUnprocessableEntity) {
		return "", fmt.Errorf("writing %s on %s: %w: %w", path, branch, ErrConflict, err)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s on %s: %w", path, branch, err)
	}
	return res.Commit.GetSHA(), nil
}

// ErrConflict is a write refused because someone else wrote the file first.
var ErrConflict = errors.New("changed concurrently")

// openPull returns the open pull request from branch into the base branch (nil if none).
func (b *Bot) openPull(ctx context.Context, branch string) (*github.PullRequest, error) {
	prs, _, err := b.gh.PullRequests.List(ctx, b.owner, b.repo, &github.PullRequestListOptions{State: "open", Head: b.owner + ":" + branch, Base: b.base})
	if err != nil {
		return nil, fmt.Errorf("listing pull requests from %s: %w", branch, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == branch {
			return pr, nil
		}
	}
	return nil, nil
}

// ensurePull opens a pull request from branch, or updates the open one's
// title and body when they differ. created reports a new pull request.
func (b *Bot) ensurePull(ctx context.Context, branch, title, body string) (pr *github.PullRequest, created bool, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		pr, err = b.openPull(ctx, branch)
		if err != nil {
			return nil, false, err
		}
		if pr != nil {
			if pr.GetTitle() == title && pr.GetBody() == body {
				return pr, false, nil
			}
			pr, _, err = b.gh.PullRequests.Edit(ctx, b.owner, b.repo, pr.GetNumber(), &github.PullRequest{Title: github.String(title), Body: github.String(body)})
			if err != nil {
				return nil, false, fmt.Errorf("updating pull request from %s: %w", branch, err)
			}
			return pr, false, nil
		}
		pr, _, err = b.gh.PullRequests.Create(ctx, b.owner, b.repo, &github.NewPullRequest{Title: github.String(title), Body: github.String(body), Head: github.String(branch), Base: github.String(b.base)})
		if err == nil {
			return pr, true, nil
		}
		if !isStatus(err, http.StatusUnprocessableEntity) {
			return nil, false, fmt.Errorf("opening pull request from %s: %w", branch, err)
		}
		// Someone opened it first (or there is nothing to merge): look again.
	}
	return nil, false, fmt.Errorf("opening pull request from %s: %w", branch, err)
}

// commentMarker tags the bot's comments so that each kind is written once and edited after.
func commentMarker(kind string) string { return "<!-- stagehand:" + kind + " -->" }

// upsertComment writes one comment of a kind on a pull request, editing the
// previous one of that kind instead of adding another; unchanged text is left alone.
func (b *Bot) upsertComment(ctx context.Context, number int, kind, text string) error {
	return b.comment(ctx, number, kind, text, true)
}

// editComment rewrites the comment of a kind if the pull request has one.
func (b *Bot) editComment(ctx context.Context, number int, kind, text string) error {
	return b.comment(ctx, number, kind, text, false)
}

func (b *Bot) comment(ctx context.Context, number int, kind, text string, create bool) error {
	body := commentMarker(kind) + "\n" + text
	comments, _, err := b.gh.Issues.ListComments(ctx, b.owner, b.repo, number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return fmt.Errorf("listing comments of #%d: %w", number, err)
	}
	for _, c := range comments {
		if strings.HasPrefix(c.GetBody(), commentMarker(kind)) {
			if c.GetBody() == body {
				return nil
			}
			if _, _, err := b.gh.Issues.EditComment(ctx, b.owner, b.repo, c.GetID(), &github.IssueComment{Body: github.String(body)}); err != nil {
				return fmt.Errorf("editing comment on #%d: %w", number, err)
			}
			return nil
		}
	}
	if !create {
		return nil
	}
	if _, _, err := b.gh.Issues.CreateComment(ctx, b.owner, b.repo, number, &github.IssueComment{Body: github.String(body)}); err != nil {
		return fmt.Errorf("commenting on #%d: %w", number, err)
	}
	return nil
}

func isStatus(err error, code int) bool {
	var e *github.ErrorResponse
	return errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == code
}

// blobCache keeps file contents by git blob sha across snapshots.
type blobCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *blobCache) get(sha string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[sha]
	return b, ok
}

func (c *blobCache) put(sha string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10000 {
		clear(c.m)
	}
	c.m[sha] = data
}
