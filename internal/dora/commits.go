package dora

import (
	"context"
	"sync"
	"time"
)

// Commits dates the first commit of a deploy's range: pkg/gitsource's
// Source.FirstCommit (the committer time of the oldest commit reachable
// from head and not from base).
type Commits interface {
	FirstCommit(ctx context.Context, base, head string) (time.Time, error)
}

// maxCached is how many ranges a CommitCache remembers.
const maxCached = 4096

// CommitCache remembers the answers of Commits: a range's first commit never
// changes, and a report asks for every deploy in the history. Errors are not
// remembered (the git source may be down for a while).
type CommitCache struct {
	commits Commits
	mu      sync.Mutex
	times   map[[2]string]time.Time
}

// NewCommitCache returns a cache in front of c.
func NewCommitCache(c Commits) *CommitCache {
	return &CommitCache{commits: c, times: map[[2]string]time.Time{}}
}

// FirstCommit answers as c's Commits, from memory when it asked before.
func (c *CommitCache) FirstCommit(ctx context.Context, base, head string) (time.Time, error) {
	key := [2]string{base, head}
	c.mu.Lock()
	t, ok := c.times[key]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := c.commits.FirstCommit(ctx, base, head)
	if err != nil {
		return time.Time{}, err
	}
	c.mu.Lock()
	if len(c.times) >= maxCached {
		clear(c.times) // rare: thousands of distinct deploys
	}
	c.times[key] = t
	c.mu.Unlock()
	return t, nil
}

// FirstCommits dates the first commit of each deploy that has a lead time
// (Deploy.LeadTimeCounts), by entry ID; a deploy git cannot date is left
// out (Report.LeadTimeUnknown counts it). It stops at ctx's end.
func FirstCommits(ctx context.Context, deploys []Deploy, c Commits) map[int64]time.Time {
	out := map[int64]time.Time{}
	if c == nil {
		return out
	}
	for _, d := range deploys {
		if ctx.Err() != nil {
			break
		}
		if !d.LeadTimeCounts() {
			continue
		}
		if t, err := c.FirstCommit(ctx, d.Base, d.Entry.Revision); err == nil {
			out[d.Entry.ID] = t
		}
	}
	return out
}
