package gitsource

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Authors returns the e-mail addresses (lower case, sorted, once each) of the authors and committers of
// the commits after base up to and including head, and of the co-authors their messages name
// (CoAuthors): those reachable from head and not from base, so a
// base that head does not descend from (a force-push) gives the commits since their merge base. With base
// "" it is head's own author and committer. Both are full SHAs; the shallow cache is deepened as for
// Descends. It is for four-eyes: an answer it cannot give completely (the history beyond the deepest
// step) is an error, never a shorter list.
func (s *Source) Authors(ctx context.Context, base, head string) ([]string, error) {
	revs := []string{head}
	if base != "" {
		revs = append(revs, base)
	}
	for _, r := range revs {
		if h := plumbing.NewHash(r); len(r) != 40 || h.String() != strings.ToLower(r) {
			return nil, fmt.Errorf("revision %q: want a full 40-digit commit SHA", r)
		}
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.cache.open(); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		emails, cut, err := authorsSince(s.cache.repo, base, head)
		if err != nil || !cut {
			return emails, err
		}
		if i == len(deepenSteps) {
			return nil, fmt.Errorf("listing the authors of %.12s..%.12s: more than %d commits of history apart", base, head, deepenSteps[len(deepenSteps)-1])
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = s.remote.deepen(ctx, deepenSteps[i])
		cancel()
		if err != nil {
			return nil, err
		}
	}
}

// authorsSince lists the authors and committers of the commits reachable from head and not from base;
// cut reports that a walk reached the shallow end of the cache (missing commits) first.
func authorsSince(repo *git.Repository, base, head string) (emails []string, cut bool, err error) {
	exclude := map[plumbing.Hash]bool{}
	if base != "" {
		// Where this walk ends at the shallow end of the cache does not matter: what it could not see,
		// the walk from head cannot either, and that one's end is what asks for more history.
		if _, err := ancestors(repo, plumbing.NewHash(base), func(c *object.Commit) bool { exclude[c.Hash] = true; return true }); err != nil {
			return nil, false, err
		}
	}
	seen := map[string]bool{}
	cut, err = ancestors(repo, plumbing.NewHash(head), func(c *object.Commit) bool {
		if exclude[c.Hash] {
			return false
		}
		seen[strings.ToLower(c.Author.Email)] = true
		seen[strings.ToLower(c.Committer.Email)] = true
		for _, e := range CoAuthors(c.Message) {
			seen[e] = true
		}
		return base != "" // with no base, head alone
	})
	if err != nil || cut {
		return nil, cut, err
	}
	delete(seen, "")
	for e := range seen {
		emails = append(emails, e)
	}
	sort.Strings(emails)
	return emails, false, nil
}

// ancestors visits from and its ancestors breadth first; visit returns whether to go on to a commit's
// parents. cut reports a commit missing from the repository (the shallow end of the cache).
func ancestors(repo *git.Repository, from plumbing.Hash, visit func(*object.Commit) bool) (cut bool, err error) {
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		c, err := object.GetCommit(repo.Storer, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			cut = true
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading commit %s: %w", h, err)
		}
		if !visit(c) {
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return cut, nil
}

// CoAuthors returns the e-mail addresses (lower case, in order, once each) of the "Co-authored-by: Name
// <e-mail>" trailers of a commit message, the key without case, on any line of it (git's trailer block is
// the last paragraph, but GitHub and people write them elsewhere too, and for four-eyes more is safer).
// A trailer without an e-mail address names nobody, and neither does one whose address holds a space or a
// control character (a lone carriage return inside a line, say): no mailbox is written that way.
func CoAuthors(message string) []string {
	var out []string
	seen := map[string]bool{}
	for line := range strings.Lines(message) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "co-authored-by") {
			continue
		}
		value = strings.TrimSpace(value)
		if i, j := strings.LastIndex(value, "<"), strings.LastIndex(value, ">"); i >= 0 && j > i {
			value = value[i+1 : j]
		}
		e := strings.ToLower(strings.TrimSpace(value))
		if !strings.Contains(e, "@") || strings.IndexFunc(e, notInAddress) >= 0 || seen[e] {
			continue
		}
		seen[e] = true
		out = append(out, e)
	}
	return out
}

// notInAddress reports whether r cannot be part of an e-mail address as written in a trailer.
func notInAddress(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }
