package gitsource

import (
	"context"
	"errors"
	"fmt"
	"net/textproto"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Limits of a Range: an answer past them is an error, never a shorter one (a rule that reads it would
// judge what it did not see).
const (
	// MaxRangeFiles bounds the distinct files a range changes.
	MaxRangeFiles = 10000
	// MaxRangeTrailers bounds the trailer values of a range's commit messages, all keys together.
	MaxRangeTrailers = 1000
)

// Range is what the commits after a base up to a head change: the files, and the trailers of their
// messages.
type Range struct {
	// Files are the repository-relative paths (sorted, once each) that the commits change against their
	// first parent (a root commit adds all of its files; a rename changes both paths).
	Files []string
	// Trailers are the trailers of the commits' messages (Trailers), by key in canonical case
	// ("change-risk" is Change-Risk), each value once, the newest commit's first.
	Trailers map[string][]string
}

// Range returns what the commits after base up to and including head change: those reachable from head
// and not from base, as for Authors (a force-push: since the merge base; base "": head alone). Both are
// full SHAs; the shallow cache is deepened as for Descends. An answer it cannot give completely (the
// history beyond the deepest step, more than MaxRangeFiles files or MaxRangeTrailers trailer values) is
// an error.
func (s *Source) Range(ctx context.Context, base, head string) (Range, error) {
	if err := fullSHAs(base, head); err != nil {
		return Range{}, err
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.cache.open(); err != nil {
		return Range{}, err
	}
	for i := 0; ; i++ {
		r, cut, err := rangeSince(s.cache.repo, base, head)
		if err != nil || !cut {
			return r, err
		}
		if i == len(deepenSteps) {
			return Range{}, fmt.Errorf("listing what %.12s..%.12s changes: more than %d commits of history apart", base, head, deepenSteps[len(deepenSteps)-1])
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = s.remote.deepen(ctx, deepenSteps[i])
		cancel()
		if err != nil {
			return Range{}, err
		}
	}
}

// fullSHAs refuses a head or a base ("" allowed) that is not a full commit SHA.
func fullSHAs(base, head string) error {
	revs := []string{head}
	if base != "" {
		revs = append(revs, base)
	}
	for _, r := range revs {
		if h := plumbing.NewHash(r); len(r) != 40 || h.String() != strings.ToLower(r) {
			return fmt.Errorf("revision %q: want a full 40-digit commit SHA", r)
		}
	}
	return nil
}

// rangeSince is Range over the cache's repository; cut reports that the walk, or a commit's first
// parent, reached the shallow end of the cache first.
func rangeSince(repo *git.Repository, base, head string) (r Range, cut bool, err error) {
	exclude := map[plumbing.Hash]bool{}
	if base != "" {
		if _, err := ancestors(repo, plumbing.NewHash(base), func(c *object.Commit) bool { exclude[c.Hash] = true; return true }); err != nil {
			return Range{}, false, err
		}
	}
	files := map[string]bool{}
	trailers := map[string][]string{}
	count := 0
	var walkErr error
	parentMissing := false
	cut, err = ancestors(repo, plumbing.NewHash(head), func(c *object.Commit) bool {
		if exclude[c.Hash] || walkErr != nil || parentMissing {
			return false
		}
		changed, missing, err := commitFiles(repo, c)
		if err != nil {
			walkErr = err
			return false
		}
		if missing {
			parentMissing = true
			return false
		}
		for _, f := range changed {
			files[f] = true
		}
		if len(files) > MaxRangeFiles {
			walkErr = fmt.Errorf("listing what %.12s..%.12s changes: more than %d files", base, head, MaxRangeFiles)
			return false
		}
		for _, t := range Trailers(c.Message) {
			if !contains(trailers[t.Key], t.Value) {
				trailers[t.Key] = append(trailers[t.Key], t.Value)
				count++
			}
		}
		if count > MaxRangeTrailers {
			walkErr = fmt.Errorf("listing what %.12s..%.12s changes: more than %d trailer values", base, head, MaxRangeTrailers)
			return false
		}
		return base != "" // with no base, head alone
	})
	if walkErr != nil {
		return Range{}, false, walkErr
	}
	if err != nil || cut || parentMissing {
		return Range{}, cut || parentMissing, err
	}
	r = Range{Files: make([]string, 0, len(files)), Trailers: trailers}
	for f := range files {
		r.Files = append(r.Files, f)
	}
	sort.Strings(r.Files)
	return r, false, nil
}

// commitFiles lists the paths c changes against its first parent (all of its files for a root commit);
// missing reports a first parent beyond the shallow end of the cache.
func commitFiles(repo *git.Repository, c *object.Commit) (files []string, missing bool, err error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, false, fmt.Errorf("reading the tree of commit %s: %w", c.Hash, err)
	}
	var parent *object.Tree
	if len(c.ParentHashes) > 0 {
		p, err := object.GetCommit(repo.Storer, c.ParentHashes[0])
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading commit %s: %w", c.ParentHashes[0], err)
		}
		if parent, err = p.Tree(); err != nil {
			return nil, false, fmt.Errorf("reading the tree of commit %s: %w", p.Hash, err)
		}
	}
	changes, err := object.DiffTree(parent, tree)
	if err != nil {
		return nil, false, fmt.Errorf("comparing commit %s with its parent: %w", c.Hash, err)
	}
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if name != "" {
				files = append(files, name)
			}
		}
	}
	return files, false, nil
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// Trailer is one "Key: value" line of a commit message's trailer block.
type Trailer struct {
	Key, Value string
}

// Trailers returns the trailers of a commit message as git reads them: the lines of its last paragraph
// (not the subject's), when each is "Key: value" (a key of letters, digits and hyphens, right before the
// colon) or continues the one before it (it starts with a space or tab; joined with a space). Keys are in
// canonical case (change-risk is Change-Risk), values trimmed, empty ones dropped. A last paragraph with
// another line is no trailer block: it gives none.
func Trailers(message string) []Trailer {
	message = strings.ReplaceAll(message, "\r\n", "\n")
	paragraphs := strings.Split(strings.TrimRight(message, " \t\n"), "\n\n")
	for len(paragraphs) > 1 && strings.TrimSpace(paragraphs[len(paragraphs)-1]) == "" {
		paragraphs = paragraphs[:len(paragraphs)-1]
	}
	if len(paragraphs) < 2 {
		return nil
	}
	var out []Trailer
	for line := range strings.Lines(strings.Trim(paragraphs[len(paragraphs)-1], "\n")) {
		line = strings.TrimRight(line, " \t\n")
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if len(out) == 0 {
				return nil
			}
			out[len(out)-1].Value = strings.TrimSpace(out[len(out)-1].Value + " " + strings.TrimSpace(line))
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok || !trailerKey(key) {
			return nil
		}
		out = append(out, Trailer{Key: textproto.CanonicalMIMEHeaderKey(key), Value: strings.TrimSpace(value)})
	}
	kept := out[:0]
	for _, t := range out {
		if t.Value != "" {
			kept = append(kept, t)
		}
	}
	return kept
}

// trailerKey reports whether k is a trailer's key: letters, digits and hyphens, starting with a letter
// or digit.
func trailerKey(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
