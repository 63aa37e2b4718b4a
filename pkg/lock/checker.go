package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Checker adapts a Service to the reconciler's lock interfaces
// (pkg/reconcile.LockChecker, LockLister and LockHolder): Blocking reports the
// locks that forbid an action at a path, BlockingWithin those of a whole
// subtree, Hold takes a deploy lock and keeps it fresh.
// Locks held through a Checker do not block its own Blocking calls, so a
// reconciler applying under its deploy lock still sees every other lock; use
// one Checker for both roles.
type Checker struct {
	svc      *Service
	loc      *time.Location
	owner    string   // TakeOverOwnLocks: whose deploy locks are ours
	formerly []string // and the names the owner wrote in older builds

	mu    sync.Mutex
	holds map[string]*holding // by path
}

// holding is one lock held through Hold.
type holding struct {
	c    *Checker
	stop context.CancelFunc
	done chan struct{}
	once sync.Once

	mu  sync.Mutex // guards cur and ttl
	cur Lock
	ttl time.Duration
}

// ReservedAuthor is the author of the deploy locks the reconciler daemon
// held while it applied in builds before authors were typed; it now writes
// ReconcilerAuthor, and still takes over a lock of either name (the same on
// every replica, so that the next leader takes over a lock a killed one
// left: TakeOverOwnLocks). The daemon ignores those deploy locks, so a
// person's lock under either name would not stop a deploy: the REST API and
// the CLI refuse them.
const ReservedAuthor = "stagehand-reconciler"

// CheckReservedAuthor returns an error for a lock request by the reconciler's
// own names (ReservedAuthor, or any of the kind stagehand, such as
// ReconcilerAuthor).
func CheckReservedAuthor(author string) error {
	a := strings.ToLower(strings.TrimSpace(author))
	switch {
	case a == ReservedAuthor || a == ReconcilerAuthor:
		return fmt.Errorf("author %q is reserved for the reconciler's own deploy locks, which do not block it; lock under your own name", strings.TrimSpace(author))
	case strings.HasPrefix(a, "stagehand:"):
		return fmt.Errorf("author %q is reserved for Stagehand's own locks; lock under your own name", strings.TrimSpace(author))
	}
	return nil
}

// NewChecker returns a Checker over svc writing times in messages in loc
// (time.Local when nil). It takes TakeOverOwnLocks.
func NewChecker(svc *Service, loc *time.Location, opts ...Option) (*Checker, error) {
	o, err := newOptions("NewChecker", opts, optTakeOver)
	if err != nil {
		return nil, fmt.Errorf("configuring lock checker: %w", err)
	}
	if svc == nil {
		return nil, errors.New("configuring lock checker: a Service is required")
	}
	if loc == nil {
		loc = time.Local
	}
	return &Checker{svc: svc, loc: loc, owner: o.owner, formerly: o.formerly, holds: map[string]*holding{}}, nil
}

// Blocking returns a message for each lock, at path or any prefix of it, that
// forbids an action of type lockType (such as "deploy"), except the locks
// this Checker holds (and, with TakeOverOwnLocks, its author's deploy locks).
func (c *Checker) Blocking(ctx context.Context, path, lockType string) ([]string, error) {
	t, err := ParseType(lockType)
	if err != nil {
		return nil, err
	}
	locks, err := c.svc.Check(ctx, path, t, true)
	if err != nil {
		return nil, err
	}
	msgs := []string{}
	for _, l := range locks {
		if !c.ours(l) {
			msgs = append(msgs, l.BlockingMessage(c.loc))
		}
	}
	return msgs, nil
}

// BlockingWithin returns, keyed by lock path, a message for each lock that
// forbids an action of type lockType at prefix, at any prefix of it or
// beneath it, except the locks this Checker holds or owns (pkg/reconcile's optional
// LockLister: one storage query per target instead of one per service).
func (c *Checker) BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	return c.blockingWithin(ctx, prefix, lockType, c.svc.Within)
}

// BlockingWithinCached is BlockingWithin read through Service.WithinCached
// (pkg/reconcile's optional CachedLockLister: the re-check before each patch
// of an apply, which a fresh plan-time check preceded).
func (c *Checker) BlockingWithinCached(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	return c.blockingWithin(ctx, prefix, lockType, c.svc.WithinCached)
}

func (c *Checker) blockingWithin(ctx context.Context, prefix, lockType string, within func(context.Context, string, Type) ([]Lock, error)) (map[string][]string, error) {
	t, err := ParseType(lockType)
	if err != nil {
		return nil, err
	}
	locks, err := within(ctx, prefix, t)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, l := range locks {
		if !c.ours(l) {
			out[l.Path] = append(out[l.Path], l.BlockingMessage(c.loc))
		}
	}
	return out, nil
}

// ours reports whether l is held through this Checker or, with
// TakeOverOwnLocks, is a deploy lock of its author.
func (c *Checker) ours(l Lock) bool {
	if l.Type == Deploy && c.isOwner(l.Author) {
		return true
	}
	return c.holdsID(l.Path, l.ID)
}

// isOwner reports whether author is the TakeOverOwnLocks owner, by its
// name or by one it wrote in older builds.
func (c *Checker) isOwner(author string) bool {
	return c.owner != "" && (author == c.owner || slices.Contains(c.formerly, author))
}

func (c *Checker) holdsID(path, id string) bool {
	c.mu.Lock()
	h, ok := c.holds[path]
	c.mu.Unlock()
	if !ok {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.ID == id
}

// Hold takes a deploy lock on path for ttl and refreshes it every ttl/3 until
// release is called or ctx ends; if the holder dies, the lock expires after
// ttl. Holding a path this Checker already holds extends that lock to ttl
// from now and returns its release. With TakeOverOwnLocks, a deploy lock at
// exactly path by the same author, left by a holder that died (a reconciler
// replica killed mid-apply), is taken over and refreshed, so the next holder
// goes on at once instead of waiting for it to expire. Any other lock
// (another author, another type, one on a prefix) refuses: the error wraps a
// *LockedError that says by what.
func (c *Checker) Hold(ctx context.Context, path string, ttl time.Duration, author string) (func(context.Context) error, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("holding lock %s: ttl must be positive, got %s", path, ttl)
	}
	p, err := NormalizePath(path)
	if err != nil {
		return nil, invalid(err)
	}
	c.mu.Lock()
	h, ok := c.holds[p]
	c.mu.Unlock()
	if ok {
		if _, err := h.refresh(ctx, ttl); err != nil {
			return nil, fmt.Errorf("holding deploy lock: %w", err)
		}
		return h.release, nil
	}
	l := Lock{Path: p, Type: Deploy, Author: author, ExpiresAt: c.svc.Now().Add(ttl)}
	l.Default(nil)
	held, err := c.svc.Lock(ctx, l)
	if err != nil {
		var le *LockedError
		if c.owner == "" || author != c.owner || !errors.As(err, &le) || !c.ownStale(le, p) {
			return nil, fmt.Errorf("holding deploy lock: %w", err)
		}
		if held, err = c.svc.Refresh(ctx, le.Locks[0], l.ExpiresAt); err != nil {
			return nil, fmt.Errorf("taking over deploy lock %s of %s: %w", p, author, err)
		}
	}
	refreshCtx, stop := context.WithCancel(ctx)
	h = &holding{c: c, ttl: ttl, stop: stop, done: make(chan struct{}), cur: held}
	c.mu.Lock()
	c.holds[p] = h
	c.mu.Unlock()
	go h.keepFresh(refreshCtx, ttl)
	return h.release, nil
}

// ownStale reports whether the only lock refusing a Hold of path by the
// owner is a deploy lock at exactly path by the owner (or by one of its
// former names): a holder with the same name that died without releasing it.
func (c *Checker) ownStale(le *LockedError, path string) bool {
	if len(le.Locks) != 1 {
		return false
	}
	l := le.Locks[0]
	return l.Path == path && l.Type == Deploy && c.isOwner(l.Author)
}

// refresh extends the lock to ttl from now (ttl 0: the current ttl) and
// returns the ttl in force.
func (h *holding) refresh(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ttl == 0 {
		ttl = h.ttl
	}
	next, err := h.c.svc.Refresh(ctx, h.cur, h.c.svc.Now().Add(ttl))
	if err != nil {
		return h.ttl, err
	}
	h.cur, h.ttl = next, ttl
	return ttl, nil
}

func (h *holding) keepFresh(ctx context.Context, ttl time.Duration) {
	defer close(h.done)
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ttl, err := h.refresh(ctx, 0)
		if err != nil {
			return // removed or replaced by someone else: nothing left to refresh
		}
		tick.Reset(ttl / 3)
	}
}

// release stops refreshing and removes the lock unless someone else has
// removed or replaced it meanwhile. Calling it again does nothing.
func (h *holding) release(ctx context.Context) error {
	var err error
	h.once.Do(func() {
		h.stop()
		<-h.done
		h.mu.Lock()
		cur := h.cur
		h.mu.Unlock()
		h.c.mu.Lock()
		if h.c.holds[cur.Path] == h {
			delete(h.c.holds, cur.Path)
		}
		h.c.mu.Unlock()
		err = h.c.svc.storage.Delete(ctx, cur)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			err = nil // gone, or taken over after expiring: not ours to remove
		}
		if err != nil {
			err = fmt.Errorf("releasing deploy lock %s: %w", cur.Path, err)
		}
	})
	return err
}
