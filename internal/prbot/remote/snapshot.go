package remote

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/google/go-github/v60/github"
)

// FS is the manifests repository at one commit as the contents API
// shows it. Every file under <root>/environments is read up front (one
// listing per directory; contents cached by blob sha, so reading the tree at
// many commits fetches each distinct file once). Any other file is read
// when first opened: the RFC lets an include name any path relative to its
// manifest, so a manifest may include ../../shared/base.json.
type FS struct {
	ctx  context.Context // of the evaluation the snapshot was taken for
	repo *Repository
	ref  string
	envs string // <root>/environments

	mu      sync.Mutex
	files   fstest.MapFS
	outside map[string]bool // paths outside envs that were opened
}

// Snapshot reads <root>/environments at ref (see FS).
func (r *Repository) Snapshot(ctx context.Context, ref string) (*FS, error) {
	fsys := &FS{ctx: ctx, repo: r, ref: ref, envs: r.Path("environments"), files: fstest.MapFS{}, outside: map[string]bool{}}
	if err := fsys.readDir(ctx, fsys.envs, 0); err != nil {
		return nil, err
	}
	return fsys, nil
}

// Open opens name, reading it through the contents API first when it lies
// outside <root>/environments and was not read yet.
func (r *FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != r.envs && !strings.HasPrefix(name, r.envs+"/") && !r.outside[name] {
		data, sha, err := r.repo.File(r.ctx, name, r.ref)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		r.outside[name] = true
		if sha != "" {
			r.files[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
	}
	return r.files.Open(name)
}

// Read lists the paths outside <root>/environments that were opened, found
// or not: a commit that changes one of them changes what resolves here.
func (r *FS) Read() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.outside))
	for p := range r.outside {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// readDir reads the .json files under dir at r.ref into r.files, nesting at
// most 32 directories deep (depth is dir's).
func (r *FS) readDir(ctx context.Context, dir string, depth int) error {
	repo, ref := r.repo, r.ref
	if depth > 32 {
		return fmt.Errorf("reading %s at %s: directories nest deeper than 32", dir, ref)
	}
	_, entries, _, err := repo.gh.Repositories.GetContents(ctx, repo.owner, repo.name, dir, &github.RepositoryContentGetOptions{Ref: ref})
	if IsStatus(err, 404) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", dir, ref, err)
	}
	for _, e := range entries {
		p := path.Join(dir, e.GetName())
		switch e.GetType() {
		case "dir":
			if err := r.readDir(ctx, p, depth+1); err != nil {
				return err
			}
		case "file":
			if !strings.HasSuffix(p, ".json") {
				continue
			}
			data, ok := repo.blobs.get(e.GetSHA())
			if !ok {
				data, _, err = repo.File(ctx, p, ref)
				if err != nil {
					return err
				}
				repo.blobs.put(e.GetSHA(), data)
			}
			r.files[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
	}
	return nil
}

// Touches reports whether a commit changed anything under <root>/environments
// or one of the paths also given (so its parent's snapshot may differ). It
// also returns the first parent.
func (r *Repository) Touches(ctx context.Context, sha string, also []string) (changed bool, parent string, err error) {
	c, _, err := r.gh.Repositories.GetCommit(ctx, r.owner, r.name, sha, nil)
	if err != nil {
		return false, "", fmt.Errorf("reading commit %s: %w", sha, err)
	}
	if len(c.Parents) > 0 {
		parent = c.Parents[0].GetSHA()
	}
	prefix := r.Path("environments") + "/"
	// GitHub lists at most 300 files of a commit; a full list may hide one.
	if len(c.Files) >= 300 {
		return true, parent, nil
	}
	watched := func(p string) bool {
		return p != "" && (strings.HasPrefix(p, prefix) || slices.Contains(also, p))
	}
	for _, f := range c.Files {
		if watched(f.GetFilename()) || watched(f.GetPreviousFilename()) {
			return true, parent, nil
		}
	}
	return false, parent, nil
}
