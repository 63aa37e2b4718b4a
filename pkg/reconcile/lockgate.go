package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// lockGate asks the LockChecker which of a plan's changes a deploy lock
// forbids: once per target with a LockLister, else once per target and
// service, at most the concurrency at a time.
type lockGate struct {
	o *options
}

// lockScope is where and how a plan's changes are checked.
type lockScope struct {
	prefix string     // the environment's lock path
	begun  *lockCheck // a check begun beside the Lists (Apply's plan), or nil
	live   bool       // Apply's plan: never the lock store's cache
}

// block moves changes that a deploy lock forbids from p.Changes to p.Blocked.
// With a LockLister it asks once per target; else once per target and
// service. Either way at most the concurrency's queries run at a time.
func (g *lockGate) block(ctx context.Context, p *Plan, s lockScope) error {
	if g.o.locks == nil || len(p.Changes) == 0 {
		return nil
	}
	pathOf := func(c Change) string { return lockPath(s.prefix, lockSegment(c.Target), lockSegment(c.Service)) }
	var paths []string
	seen := map[string]bool{}
	for _, c := range p.Changes {
		if path := pathOf(c); !seen[path] {
			seen[path] = true
			paths = append(paths, path)
		}
	}
	var msgs map[string][]string
	var err error
	if s.begun != nil {
		msgs, err = s.begun.covering(paths)
	} else if l, ok := g.o.locks.(LockLister); ok {
		query := l.BlockingWithin
		if c, ok := l.(CachedLockLister); ok && !s.live {
			// A plan reads the watches; Apply, which checks the locks
			// afresh, decides. (A consistent read here would also make
			// Apply's, a moment later, wait for the API server's next
			// watch progress notification: up to 100 ms.)
			query = c.BlockingWithinCached
		}
		var targets []string
		for _, c := range p.Changes {
			targets = append(targets, c.Target)
		}
		msgs, err = g.locksWithin(ctx, query, targetLocks{prefix: s.prefix, targets: targets}, paths)
	} else {
		msgs, err = g.locksAt(ctx, paths)
	}
	if err != nil {
		return err
	}
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		if m := msgs[pathOf(c)]; len(m) > 0 {
			p.Blocked = append(p.Blocked, Blocked{Change: c, Locks: m})
			continue
		}
		kept = append(kept, c)
	}
	p.Changes = kept
	return nil
}

// locksAt asks the LockChecker about each path.
func (g *lockGate) locksAt(ctx context.Context, paths []string) (map[string][]string, error) {
	found := make([][]string, len(paths))
	err := forEach(len(paths), g.o.concurrency, func(i int) error {
		var err error
		if found[i], err = g.o.locks.Blocking(ctx, paths[i], LockTypeDeploy); err != nil {
			return fmt.Errorf("checking locks at %s: %w", paths[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(paths))
	for i, path := range paths {
		out[path] = found[i]
	}
	return out, nil
}

// locksWithin asks query once per target of ts for every lock at, above and
// beneath <prefix>/<target>, and picks each path's locks from the answer.
func (g *lockGate) locksWithin(ctx context.Context, query lockQueryFunc, ts targetLocks, paths []string) (map[string][]string, error) {
	all, err := g.within(ctx, query, ts)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(paths))
	for _, path := range paths {
		out[path] = covering(all, path)
	}
	return out, nil
}

// lockCheck is a lock check begun before the plan's changes are known: every
// lock at, above and beneath each target's lock path.
type lockCheck struct {
	done chan struct{}
	all  map[string][]string
	err  error
}

// query begins, when the LockChecker is a LockLister, the check of the
// locks of every target of req (one BlockingWithin per target, as
// locksWithin asks once the changes are known); nil otherwise.
func (g *lockGate) query(ctx context.Context, req Request) *lockCheck {
	l, ok := g.o.locks.(LockLister)
	if !ok {
		return nil
	}
	var targets []string
	for _, t := range req.Targets {
		targets = append(targets, t.Name)
	}
	q := &lockCheck{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		q.all, q.err = g.within(ctx, l.BlockingWithin, targetLocks{prefix: req.LockPath, targets: targets})
	}()
	return q
}

// covering waits for q and returns each path's locks.
func (q *lockCheck) covering(paths []string) (map[string][]string, error) {
	<-q.done
	if q.err != nil {
		return nil, q.err
	}
	out := make(map[string][]string, len(paths))
	for _, path := range paths {
		out[path] = covering(q.all, path)
	}
	return out, nil
}

// lockQueryFunc is a LockLister's BlockingWithin, or a CachedLockLister's
// BlockingWithinCached.
type lockQueryFunc func(ctx context.Context, prefix, lockType string) (map[string][]string, error)

// targetLocks is the lock paths of targets under an environment's prefix.
type targetLocks struct {
	prefix  string
	targets []string // target names, repeats allowed
}

// within asks query once per distinct target for every lock at, above and
// beneath <prefix>/<target>, keyed by lock path.
func (g *lockGate) within(ctx context.Context, query lockQueryFunc, ts targetLocks) (map[string][]string, error) {
	var targets []string
	for _, name := range ts.targets {
		if t := lockPath(ts.prefix, lockSegment(name)); !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	within := make([]map[string][]string, len(targets))
	err := forEach(len(targets), g.o.concurrency, func(i int) error {
		var err error
		if within[i], err = query(ctx, targets[i], LockTypeDeploy); err != nil {
			return fmt.Errorf("checking locks within %s: %w", targets[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	all := map[string][]string{}
	for _, m := range within {
		maps.Copy(all, m)
	}
	return all, nil
}
