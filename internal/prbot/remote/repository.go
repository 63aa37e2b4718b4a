package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Repository is the manifests repository on GitHub as every flow of the bot
// reads it: its branches (refs), its files (the contents API), pipeline.yaml
// and its environments, resolved with the bot's manifest options. Pull
// requests are Pulls', check runs Checks', writes to a branch's files
// Branches'.
type Repository struct {
	gh          *github.Client
	owner, name string
	base        string            // the base branch
	root        string            // the directory holding environments/ and pipeline.yaml
	opts        []manifest.Option // how manifests are read and edited
	blobs       *blobCache
}

// Option configures New.
type Option func(*Repository) error

// WithBase sets the base branch (default "main").
func WithBase(branch string) Option {
	return func(r *Repository) error {
		if branch == "" {
			return errors.New("setting base branch: empty")
		}
		r.base = branch
		return nil
	}
}

// WithRoot sets the directory holding environments/ and pipeline.yaml
// (default "."; leading and trailing slashes are dropped).
func WithRoot(root string) Option {
	return func(r *Repository) error { r.root = strings.Trim(root, "/"); return nil }
}

// WithManifestOptions sets how manifests are read and edited (default none:
// strict).
func WithManifestOptions(opts ...manifest.Option) Option {
	return func(r *Repository) error { r.opts = append(r.opts, opts...); return nil }
}

// New returns owner/name on GitHub, reached through gh.
func New(gh *github.Client, owner, name string, opts ...Option) (*Repository, error) {
	r := &Repository{gh: gh, owner: owner, name: name, base: "main", blobs: &blobCache{m: map[string][]byte{}}}
	for _, opt := range opts {
		if err := opt(r); err != nil {
			return nil, err
		}
	}
	switch {
	case gh == nil:
		return nil, errors.New("creating repository: no GitHub client")
	case owner == "" || name == "" || strings.Contains(owner, "/") || strings.Contains(name, "/"):
		return nil, fmt.Errorf("creating repository: %q/%q: want OWNER/NAME", owner, name)
	}
	return r, nil
}

// Owner is the repository's owner.
func (r *Repository) Owner() string { return r.owner }

// Name is the repository's name (without its owner).
func (r *Repository) Name() string { return r.name }

// Client is the GitHub client the repository is reached through.
func (r *Repository) Client() *github.Client { return r.gh }

// Base is the base branch.
func (r *Repository) Base() string { return r.base }

// Root is the directory holding environments/ ("" or "." for the top).
func (r *Repository) Root() string { return r.root }

// ManifestOptions are the options manifests are read and edited with.
func (r *Repository) ManifestOptions() []manifest.Option { return r.opts }

// Path joins the repository root and a path below it.
func (r *Repository) Path(p string) string {
	if r.root == "" || r.root == "." {
		return p
	}
	return r.root + "/" + p
}

// Resolve resolves env in fsys (the repository at one commit) with the
// bot's manifest options.
func (r *Repository) Resolve(ctx context.Context, fsys fs.FS, env string) (*manifest.Environment, error) {
	return manifest.Resolve(ctx, manifest.Repo{FS: fsys, Root: r.root}, env, r.opts...)
}

// HeadRef returns the commit a branch points at ("" when the branch does not exist).
func (r *Repository) HeadRef(ctx context.Context, branch string) (string, error) {
	ref, _, err := r.gh.Git.GetRef(ctx, r.owner, r.name, "heads/"+branch)
	if IsStatus(err, http.StatusNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading branch %s: %w", branch, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// SetRef points branch at sha, creating it when missing.
func (r *Repository) SetRef(ctx context.Context, branch, sha string, force bool) error {
	_, _, err := r.gh.Git.UpdateRef(ctx, r.owner, r.name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}}, force)
	if err != nil {
		return fmt.Errorf("moving branch %s to %s: %w", branch, sha, err)
	}
	return nil
}

// CreateRef creates branch at sha; created is false when it already existed.
func (r *Repository) CreateRef(ctx context.Context, branch, sha string) (created bool, err error) {
	_, _, err = r.gh.Git.CreateRef(ctx, r.owner, r.name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}})
	if IsStatus(err, http.StatusUnprocessableEntity) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	return true, nil
}

// DeleteBranch deletes branch, best effort: a leftover branch is reset by
// the next bump.
func (r *Repository) DeleteBranch(ctx context.Context, branch string) {
	_, _ = r.gh.Git.DeleteRef(ctx, r.owner, r.name, "heads/"+branch)
}

// Compare compares head with base (GitHub's base...head); the error is
// GitHub's, for the caller to say what it compared for.
func (r *Repository) Compare(ctx context.Context, base, head string) (*github.CommitsComparison, error) {
	cmp, _, err := r.gh.Repositories.CompareCommits(ctx, r.owner, r.name, base, head, nil)
	return cmp, err
}

// File reads path at ref: its content and blob sha (nil, "" when absent).
func (r *Repository) File(ctx context.Context, path, ref string) ([]byte, string, error) {
	fc, _, _, err := r.gh.Repositories.GetContents(ctx, r.owner, r.name, path, &github.RepositoryContentGetOptions{Ref: ref})
	if IsStatus(err, http.StatusNotFound) {
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

// FileEdit is one file written on a branch: its path, the new content and
// the commit message.
type FileEdit struct {
	Branch, Path, Message string
	Content               []byte
}

// ErrConflict is a write refused because someone else wrote the file first
// (internal/prbot's ErrConflict, documented there).
var ErrConflict = errors.New("changed concurrently")

// Pipeline reads and parses pipeline.yaml at ref: beside environments/, or
// else inside it (nil when the repository has neither).
func (r *Repository) Pipeline(ctx context.Context, ref string) (*promote.Pipeline, error) {
	for _, name := range []string{r.Path(promote.FileName), r.Path("environments/" + promote.FileName)} {
		data, _, err := r.File(ctx, name, ref)
		if err != nil {
			return nil, err
		}
		if data != nil {
			return promote.Parse(name, data)
		}
	}
	return nil, nil
}

// IsStatus reports whether err is GitHub's answer with status code.
func IsStatus(err error, code int) bool {
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

// Commit reads commit sha (any form GitHub takes: 7 to 40 hex digits); the
// error is GitHub's (IsStatus 404 or 422: no such commit).
func (r *Repository) Commit(ctx context.Context, sha string) (*github.RepositoryCommit, error) {
	c, _, err := r.gh.Repositories.GetCommit(ctx, r.owner, r.name, sha, nil)
	return c, err
}
