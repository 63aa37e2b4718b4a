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

// writeBranch makes branch hold the base commit plus exactly the given file
// contents. A branch that already contains the base head and those contents
// is left alone (changed false); one that contains the base head gets only
// the files that differ (and files it changed but no longer should are put
// back); one behind the base is reset to it first.
func (b *Bot) writeBranch(ctx context.Context, branch, baseSHA string, files map[string][]byte, message string) (changed bool, err error) {
	head, err := b.headRef(ctx, branch)
	if err != nil {
		return false, err
	}
	revert := map[string]bool{}
	switch {
	case head == "":
		if _, err := b.createRef(ctx, branch, baseSHA); err != nil {
			return false, err
		}
	default:
		cmp, _, err := b.gh.Repositories.CompareCommits(ctx, b.owner, b.repo, baseSHA, head, nil)
		if err != nil {
			return false, fmt.Errorf("comparing %s with %s: %w", branch, b.base, err)
		}
		if cmp.GetMergeBaseCommit().GetSHA() != baseSHA {
			if err := b.setRef(ctx, branch, baseSHA, true); err != nil {
				return false, err
			}
			changed = true
			break
		}
		same := len(cmp.Files) == len(files)
		for _, f := range cmp.Files {
			want, ok := files[f.GetFilename()]
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
	for _, name := range sortedKeys(files) {
		wrote, err := b.ensureFile(ctx, branch, name, files[name], message)
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	for _, name := range sortedKeys(revert) {
		wrote, err := b.restoreFile(ctx, branch, baseSHA, name, message)
		if err != nil {
			return false, err
		}
		changed = changed || wrote
	}
	return changed, nil
}

// restoreFile puts name on branch back to what it is at baseSHA, deleting
// it when the base has no such file. It reports whether it wrote.
func (b *Bot) restoreFile(ctx context.Context, branch, baseSHA, name, message string) (bool, error) {
	base, _, err := b.file(ctx, name, baseSHA)
	if err != nil {
		return false, err
	}
	if base == nil {
		return true, b.deleteFile(ctx, branch, name, message)
	}
	return b.ensureFile(ctx, branch, name, base, message)
}

// ensureFile writes content to name on branch unless it is already there,
// re-reading and retrying when someone else wrote in between.
func (b *Bot) ensureFile(ctx context.Context, branch, name string, content []byte, message string) (bool, error) {
	for attempt := 1; ; attempt++ {
		cur, sha, err := b.file(ctx, name, branch)
		if err != nil {
			return false, err
		}
		if cur != nil && bytes.Equal(cur, content) {
			return false, nil
		}
		_, err = b.putFile(ctx, branch, name, sha, message, content)
		if errors.Is(err, ErrConflict) && attempt < maxWriteAttempts {
			continue
		}
		return err == nil, err
	}
}

// deleteFile removes name from branch (nothing to do if it is not there).
func (b *Bot) deleteFile(ctx context.Context, branch, name, message string) error {
	_, sha, err := b.file(ctx, name, branch)
	if err != nil || sha == "" {
		return err
	}
	_, _, err = b.gh.Repositories.DeleteFile(ctx, b.owner, b.repo, name, &github.RepositoryContentFileOptions{Message: github.String(message), SHA: github.String(sha), Branch: github.String(branch)})
	if err != nil {
		return fmt.Errorf("deleting %s on %s: %w", name, branch, err)
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
