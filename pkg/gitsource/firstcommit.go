package gitsource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNoCommits is returned (wrapped) by FirstCommit when head brings no
// commit that base does not have.
var ErrNoCommits = errors.New("no commits in range")

// FirstCommit returns the commit time (git's committer date) of the oldest
// commit after base up to and including head: those reachable from head and
// not from base, as Authors walks them (a base that head does not descend
// from gives the commits since their merge base; with base "" it is head's
// own time). It is where a deploy's lead time starts. Both are full SHAs;
// the shallow cache is deepened as for Descends, and a range longer than the
// deepest step is an error, never a later time.
func (s *Source) FirstCommit(ctx context.Context, base, head string) (time.Time, error) {
	revs := []string{head}
	if base != "" {
		revs = append(revs, base)
	}
	for _, r := range revs {
		if h := plumbing.NewHash(r); len(r) != 40 || h.String() != strings.ToLower(r) {
			return time.Time{}, fmt.Errorf("revision %q: want a full 40-digit commit SHA", r)
		}
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.cache.open(); err != nil {
		return time.Time{}, err
	}
	for i := 0; ; i++ {
		first, cut, err := firstSince(s.cache.repo, base, head)
		if err != nil {
			return time.Time{}, err
		}
		if !cut {
			if first.IsZero() {
				return time.Time{}, fmt.Errorf("first commit of %.12s..%.12s: %w", base, head, ErrNoCommits)
			}
			return first, nil
		}
		if i == len(deepenSteps) {
			return time.Time{}, fmt.Errorf("first commit of %.12s..%.12s: more than %d commits of history apart", base, head, deepenSteps[len(deepenSteps)-1])
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = s.remote.deepen(ctx, deepenSteps[i])
		cancel()
		if err != nil {
			return time.Time{}, err
		}
	}
}

// firstSince is the oldest committer time among the commits reachable from
// head and not from base (zero when there is none); cut reports that a walk
// reached the shallow end of the cache first.
func firstSince(repo *git.Repository, base, head string) (first time.Time, cut bool, err error) {
	exclude := map[plumbing.Hash]bool{}
	if base != "" {
		if _, err := ancestors(repo, plumbing.NewHash(base), func(c *object.Commit) bool { exclude[c.Hash] = true; return true }); err != nil {
			return time.Time{}, false, err
		}
	}
	cut, err = ancestors(repo, plumbing.NewHash(head), func(c *object.Commit) bool {
		if exclude[c.Hash] {
			return false
		}
		if when := c.Committer.When; first.IsZero() || when.Before(first) {
			first = when
		}
		return base != "" // with no base, head alone
	})
	if err != nil || cut {
		return time.Time{}, cut, err
	}
	return first.UTC(), false, nil
}
