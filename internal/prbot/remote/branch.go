package remote

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/google/go-github/v60/github"
)

// Branches writes the files of the repository's branches: one file
// (Put, Ensure) or a branch made to hold the base plus given files (Write).
type Branches struct {
	Repo *Repository
}

// maxWriteAttempts bounds the writes of one file that others' writes refuse.
const maxWriteAttempts = 8

// BranchEdit asks for Branch to hold the base commit BaseSHA plus exactly
// the given file contents (Files, by path), written with Message.
type BranchEdit struct {
	Branch, BaseSHA, Message string
	Files                    map[string][]byte
}

// Write makes e.Branch hold e.BaseSHA plus exactly e.Files. A branch
// that already contains the base head and those contents is left alone
// (changed false); one that contains the base head gets only the files that
// differ (and files it changed but no longer should are put back); one
// behind the base is reset to it first.
func (b *Branches) Write(ctx context.Context, e BranchEdit) (changed bool, err error) {
	r := b.Repo
	head, err := r.HeadRef(ctx, e.Branch)
	if err != nil {
		return false, err
	}
	revert := map[string]bool{}
	switch {
	case head == "":
		if _, err := r.CreateRef(ctx, e.Branch, e.BaseSHA); err != nil {
			return false, err
		}
	default:
		cmp, err := r.Compare(ctx, e.BaseSHA, head)
		if err != nil {
			return false, fmt.Errorf("comparing %s with %s: %w", e.Branch, r.base, err)
		}
		if cmp.GetMergeBaseCommit().GetSHA() != e.BaseSHA {
			if err := r.SetRef(ctx, e.Branch, e.BaseSHA, true); err != nil {
				return false, err
			}
			changed = true
			break
		}
		same := len(cmp.Files) == len(e.Files)
		for _, f := range cmp.Files {
			want, ok := e.Files[f.GetFilename()]
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
	for _, name := range slices.Sorted(maps.Keys(e.Files)) {
		wrote, err := b.Ensure(ctx, FileEdit{Branch: e.Branch, Path: name, Message: e.Message, Content: e.Files[name]})
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	for _, name := range slices.Sorted(maps.Keys(revert)) {
		wrote, err := b.restore(ctx, e, name)
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	return changed, nil
}

// restore puts name on e.Branch back to what it is at e.BaseSHA,
// deleting it when the base has no such file. It reports whether it wrote.
func (b *Branches) restore(ctx context.Context, e BranchEdit, name string) (bool, error) {
	r := b.Repo
	base, _, err := r.File(ctx, name, e.BaseSHA)
	if err != nil {
		return false, err
	}
	if base == nil {
		return true, b.delete(ctx, FileEdit{Branch: e.Branch, Path: name, Message: e.Message})
	}
	return b.Ensure(ctx, FileEdit{Branch: e.Branch, Path: name, Message: e.Message, Content: base})
}

// Ensure writes e unless the file already holds e.Content, re-reading
// and retrying when someone else wrote in between.
func (b *Branches) Ensure(ctx context.Context, e FileEdit) (bool, error) {
	r := b.Repo
	for attempt := 1; ; attempt++ {
		cur, sha, err := r.File(ctx, e.Path, e.Branch)
		if err != nil {
			return false, err
		}
		if cur != nil && bytes.Equal(cur, e.Content) {
			return false, nil
		}
		_, err = b.Put(ctx, e, sha)
		if errors.Is(err, ErrConflict) && attempt < maxWriteAttempts {
			continue
		}
		return err == nil, err
	}
}

// delete removes e.Path from e.Branch (nothing to do if it is not
// there); e.Content is not used.
func (b *Branches) delete(ctx context.Context, e FileEdit) error {
	r := b.Repo
	_, sha, err := r.File(ctx, e.Path, e.Branch)
	if err != nil || sha == "" {
		return err
	}
	_, _, err = r.gh.Repositories.DeleteFile(ctx, r.owner, r.name, e.Path, &github.RepositoryContentFileOptions{Message: github.String(e.Message), SHA: github.String(sha), Branch: github.String(e.Branch)})
	if err != nil {
		return fmt.Errorf("deleting %s on %s: %w", e.Path, e.Branch, err)
	}
	return nil
}

// Put writes e, replacing the blob sha ("" to create). A conflict
// (someone else wrote first) matches ErrConflict.
func (b *Branches) Put(ctx context.Context, e FileEdit, sha string) (string, error) {
	r := b.Repo
	opts := &github.RepositoryContentFileOptions{Message: github.String(e.Message), Content: e.Content, Branch: github.String(e.Branch)}
	if sha != "" {
		opts.SHA = github.String(sha)
	}
	res, _, err := r.gh.Repositories.UpdateFile(ctx, r.owner, r.name, e.Path, opts)
	if IsStatus(err, http.StatusConflict) || IsStatus(err, http.StatusUnprocessableEntity) {
		return "", fmt.Errorf("writing %s on %s: %w: %w", e.Path, e.Branch, ErrConflict, err)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s on %s: %w", e.Path, e.Branch, err)
	}
	return res.Commit.GetSHA(), nil
}

// blobSHA is git's object id of a blob with this content.
func blobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return fmt.Sprintf("%x", h.Sum(nil))
}
