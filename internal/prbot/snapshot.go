package prbot

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing/fstest"

	"github.com/google/go-github/v60/github"
)

// snapshot reads every file under <root>/environments at ref through the
// contents API into an in-memory file system (paths relative to the
// repository). Contents are cached by blob sha, so reading the same tree at
// many commits fetches each distinct file once. Includes therefore resolve
// within environments/, where the manifests live.
func (b *Bot) snapshot(ctx context.Context, ref string) (fstest.MapFS, error) {
	fsys := fstest.MapFS{}
	if err := b.readDir(ctx, fsys, b.path("environments"), ref, 0); err != nil {
		return nil, err
	}
	return fsys, nil
}

func (b *Bot) readDir(ctx context.Context, fsys fstest.MapFS, dir, ref string, depth int) error {
	if depth > 32 {
		return fmt.Errorf("reading %s at %s: directories nest deeper than 32", dir, ref)
	}
	_, entries, _, err := b.gh.Repositories.GetContents(ctx, b.owner, b.repo, dir, &github.RepositoryContentGetOptions{Ref: ref})
	if isStatus(err, 404) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", dir, ref, err)
	}
	for _, e := range entries {
		p := path.Join(dir, e.GetName())
		switch e.GetType() {
		case "dir":
			if err := b.readDir(ctx, fsys, p, ref, depth+1); err != nil {
				return err
			}
		case "file":
			if !strings.HasSuffix(p, ".json") {
				continue
			}
			data, ok := b.blobs.get(e.GetSHA())
			if !ok {
				data, _, err = b.file(ctx, p, ref)
				if err != nil {
					return err
				}
				b.blobs.put(e.GetSHA(), data)
			}
			fsys[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
	}
	return nil
}

// touches reports whether a commit changed anything under <root>/environments
// (so its parent's snapshot may differ). It also returns the first parent.
func (b *Bot) touches(ctx context.Context, sha string) (changed bool, parent string, err error) {
	c, _, err := b.gh.Repositories.GetCommit(ctx, b.owner, b.repo, sha, nil)
	if err != nil {
		return false, "", fmt.Errorf("reading commit %s: %w", sha, err)
	}
	if len(c.Parents) > 0 {
		parent = c.Parents[0].GetSHA()
	}
	prefix := b.path("environments") + "/"
	// GitHub lists at most 300 files of a commit; a full list may hide one.
	if len(c.Files) >= 300 {
		return true, parent, nil
	}
	for _, f := range c.Files {
		if strings.HasPrefix(f.GetFilename(), prefix) || strings.HasPrefix(f.GetPreviousFilename(), prefix) {
			return true, parent, nil
		}
	}
	return false, parent, nil
}
