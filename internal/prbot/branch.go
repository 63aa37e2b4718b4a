package prbot

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"sort"

	"github.com/google/go-github/v60/github"
)

// branchEdit asks for branch to hold the base commit baseSHA plus exactly
// the given file contents (by path), written with message.
type branchEdit struct {
	branch, baseSHA, message string
	files                    map[string][]byte
}

// writeBranch makes e.branch hold e.baseSHA plus exactly e.files. A branch
// that already contains the base head and those contents is left alone
// (changed false); one that contains the base head gets only the files that
// differ (and files it changed but no longer should are put back); one
// behind the base is reset to it first.
func (r *repository) writeBranch(ctx context.Context, e branchEdit) (changed bool, err error) {
	head, err := r.headRef(ctx, e.branch)
	if err != nil {
		return false, err
	}
	revert := map[string]bool{}
	switch {
	case head == "":
		if _, err := r.createRef(ctx, e.branch, e.baseSHA); err != nil {
			return false, err
		}
	default:
		cmp, err := r.compare(ctx, e.baseSHA, head)
		if err != nil {
			return false, fmt.Errorf("comparing %s with %s: %w", e.branch, r.base, err)
		}
		if cmp.GetMergeBaseCommit().GetSHA() != e.baseSHA {
			if err := r.setRef(ctx, e.branch, e.baseSHA, true); err != nil {
				return false, err
			}
			changed = true
			break
		}
		same := len(cmp.Files) == len(e.files)
		for _, f := range cmp.Files {
			want, ok := e.files[f.GetFilename()]
			if !ok {
				revert[f.GetFilename()] = true
				same = false
				continue
			}
			if f.GetSHA() != blobSHA(want) {
				same = false
			}
		}
		if same {
			return false, nil
		}
	}
	for _, name := range sortedKeys(e.files) {
		wrote, err := r.ensureFile(ctx, fileEdit{branch: e.branch, path: name, message: e.message, content: e.files[name]})
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	for _, name := range sortedKeys(revert) {
		wrote, err := r.restoreFile(ctx, e, name)
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	return changed, nil
}

// restoreFile puts name on e.branch back to what it is at e.baseSHA,
// deleting it when the base has no such file. It reports whether it wrote.
func (r *repository) restoreFile(ctx context.Context, e branchEdit, name string) (bool, error) {
	base, _, err := r.file(ctx, name, e.baseSHA)
	if err != nil {
		return false, err
	}
	if base == nil {
		return true, r.deleteFile(ctx, fileEdit{branch: e.branch, path: name, message: e.message})
	}
	return r.ensureFile(ctx, fileEdit{branch: e.branch, path: name, message: e.message, content: base})
}

// ensureFile writes e unless the file already holds e.content, re-reading
// and retrying when someone else wrote in between.
func (r *repository) ensureFile(ctx context.Context, e fileEdit) (bool, error) {
	for attempt := 1; ; attempt++ {
		cur, sha, err := r.file(ctx, e.path, e.branch)
		if err != nil {
			return false, err
		}
		if cur != nil && bytes.Equal(cur, e.content) {
			return false, nil
		}
		_, err = r.putFile(ctx, e, sha)
		if errors.Is(err, ErrConflict) && attempt < maxWriteAttempts {
			continue
		}
		return err == nil, err
	}
}

// deleteFile removes e.path from e.branch (nothing to do if it is not
// there); e.content is not used.
func (r *repository) deleteFile(ctx context.Context, e fileEdit) error {
	_, sha, err := r.file(ctx, e.path, e.branch)
	if err != nil || sha == "" {
		return err
	}
	_, _, err = r.gh.Repositories.DeleteFile(ctx, r.owner, r.name, e.path, &github.RepositoryContentFileOptions{Message: github.String(e.message), SHA: github.String(sha), Branch: github.String(e.branch)})
	if err != nil {
		return fmt.Errorf("deleting %s on %s: %w", e.path, e.branch, err)
	}
	return nil
}

// blobSHA is git's object id of a blob with this content.
func blobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
