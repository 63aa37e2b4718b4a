package prbot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// repository is the manifests repository on GitHub as every flow of the bot
// reads and writes it: its branches (refs), its files (the contents API),
// pipeline.yaml and its environments, resolved with the bot's manifest
// options. Pull requests are pulls', check runs checks'; branch.go holds the
// writes that make a branch hold given files, snapshot.go the repository at
// one commit as a file system.
type repository struct {
	gh          *github.Client
	owner, name string
	base        string            // the base branch
	root        string            // the directory holding environments/ and pipeline.yaml
	opts        []manifest.Option // how manifests are read and edited
	blobs       *blobCache
}

// path joins the repository root and a path below it.
func (r *repository) path(p string) string {
	if r.root == "" || r.root == "." {
		return p
	}
	return r.root + "/" + p
}

// resolve resolves env in fsys (the repository at one commit) with the
// bot's manifest options.
func (r *repository) resolve(ctx context.Context, fsys fs.FS, env string) (*manifest.Environment, error) {
	return manifest.Resolve(ctx, fsys, r.root, env, r.opts...)
}

// headRef returns the commit a branch points at ("" when the branch does not exist).
func (r *repository) headRef(ctx context.Context, branch string) (string, error) {
	ref, _, err := r.gh.Git.GetRef(ctx, r.owner, r.name, "heads/"+branch)
	if isStatus(err, http.StatusNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading branch %s: %w", branch, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// setRef points branch at sha, creating it when missing.
func (r *repository) setRef(ctx context.Context, branch, sha string, force bool) error {
	_, _, err := r.gh.Git.UpdateRef(ctx, r.owner, r.name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}}, force)
	if err != nil {
		return fmt.Errorf("moving branch %s to %s: %w", branch, sha, err)
	}
	return nil
}

// createRef creates branch at sha; created is false when it already existed.
func (r *repository) createRef(ctx context.Context, branch, sha string) (created bool, err error) {
	_, _, err = r.gh.Git.CreateRef(ctx, r.owner, r.name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}})
	if isStatus(err, http.StatusUnprocessableEntity) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	return true, nil
}

// deleteBranch deletes branch, best effort: a leftover branch is reset by
// the next bump.
func (r *repository) deleteBranch(ctx context.Context, branch string) {
	_, _ = r.gh.Git.DeleteRef(ctx, r.owner, r.name, "heads/"+branch)
}

// compare compares head with base (GitHub's base...head); the error is
// GitHub's, for the caller to say what it compared for.
func (r *repository) compare(ctx context.Context, base, head string) (*github.CommitsComparison, error) {
	cmp, _, err := r.gh.Repositories.CompareCommits(ctx, r.owner, r.name, base, head, nil)
	return cmp, err
}

// file reads path at ref: its content and blob sha (nil, "" when absent).
func (r *repository) file(ctx context.Context, path, ref string) ([]byte, string, error) {
	fc, _, _, err := r.gh.Repositories.GetContents(ctx, r.owner, r.name, path, &github.RepositoryContentGetOptions{Ref: ref})
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

// fileEdit is one file written on a branch: its path, the new content and
// the commit message.
type fileEdit struct {
	branch, path, message string
	content               []byte
}

// putFile writes e, replacing the blob sha ("" to create). A conflict
// (someone else wrote first) matches ErrConflict.
func (r *repository) putFile(ctx context.Context, e fileEdit, sha string) (string, error) {
	opts := &github.RepositoryContentFileOptions{Message: github.String(e.message), Content: e.content, Branch: github.String(e.branch)}
	if sha != "" {
		opts.SHA = github.String(sha)
	}
	res, _, err := r.gh.Repositories.UpdateFile(ctx, r.owner, r.name, e.path, opts)
	if isStatus(err, http.StatusConflict) || isStatus(err, http.StatusUnprocessableEntity) {
		return "", fmt.Errorf("writing %s on %s: %w: %w", e.path, e.branch, ErrConflict, err)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s on %s: %w", e.path, e.branch, err)
	}
	return res.Commit.GetSHA(), nil
}

// ErrConflict is a write refused because someone else wrote the file first.
var ErrConflict = errors.New("changed concurrently")

// pipeline reads and parses pipeline.yaml at ref: beside environments/, or
// else inside it (nil when the repository has neither).
func (r *repository) pipeline(ctx context.Context, ref string) (*promote.Pipeline, error) {
	for _, name := range []string{r.path(promote.FileName), r.path("environments/" + promote.FileName)} {
		data, _, err := r.file(ctx, name, ref)
		if err != nil {
			return nil, err
		}
		if data != nil {
			return promote.Parse(name, data)
		}
	}
	return nil, nil
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
