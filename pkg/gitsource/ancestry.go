package gitsource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// deepenSteps are the history depths Descends fetches, in turn, when the
// shallow cache ends before it can answer. An ancestor further back than the
// last step is reported as not descended: the safe answer for a gate.
var deepenSteps = []int{64, 1024, 16384}

// Descends reports whether rev is ancestor or a descendant of it: whether
// moving from ancestor to rev moves history forward. Both are full SHAs. The
// cache is shallow, so the history between them is fetched (deepening the
// cache step by step) when the cache ends before the answer; an ancestor
// beyond the deepest step, or not in the branch's history at all (a
// force-push), gives false.
func (s *Source) Descends(ctx context.Context, rev, ancestor string) (bool, error) {
	if rev == ancestor {
		return true, nil
	}
	for _, r := range []string{rev, ancestor} {
		if h := plumbing.NewHash(r); len(r) != 40 || h.String() != strings.ToLower(r) {
			return false, fmt.Errorf("revision %q: want a full 40-digit commit SHA", r)
		}
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.cache.open(); err != nil {
		return false, err
	}
	want := plumbing.NewHash(ancestor)
	for i := 0; ; i++ {
		found, cut, err := walk(s.cache.repo, plumbing.NewHash(rev), want)
		if err != nil || found || !cut || i == len(deepenSteps) {
			return found, err
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = s.remote.deepen(ctx, deepenSteps[i])
		cancel()
		if err != nil {
			return false, err
		}
	}
}

// walk looks for want among the ancestors of from in repo; cut reports that
// the walk reached the shallow end of the cache (missing parents) first.
func walk(repo *git.Repository, from, want plumbing.Hash) (found, cut bool, err error) {
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == want {
			return true, false, nil
		}
		c, err := object.GetCommit(repo.Storer, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			cut = true
			continue
		}
		if err != nil {
			return false, false, fmt.Errorf("reading commit %s: %w", h, err)
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, cut, nil
}
