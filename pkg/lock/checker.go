package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Checker adapts a Service to the reconciler's lock interfaces
// (pkg/reconcile.LockChecker and LockHolder): Blocking reports the locks that
// forbid an action at a path, Hold takes a deploy lock and keeps it fresh.
// Locks held through a Checker do not block its own Blocking calls, so a
// reconciler applying under its deploy lock still sees every other lock.
type Checker struct {
	svc *Service
	loc *time.Location

	mu   sync.Mutex
	held map[string]bool // IDs of the locks held through Hold
}

// NewChecker returns a Checker over svc writing times in messages in loc
// (time.Local when nil).
func NewChecker(svc *Service, loc *time.Location) *Checker {
	if loc == nil {
		loc = time.Local
	}
	return &Checker{svc: svc, loc: loc, held: map[string]bool{}}
}

// Blocking returns a message for each lock, at path or any prefix of it, that
// forbids an action of type lockType (such as "deploy").
func (c *Checker) Blocking(ctx context.Context, path, lockType string) ([]string, error) {
	t, err := ParseType(lockType)
	if err != nil {
		return nil, err
	}
	locks, err := c.svc.Check(ctx, path, t, true)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := []string{}
	for _, l := range locks {
		if !c.held[l.ID] {
			msgs = append(msgs, l.BlockingMessage(c.loc))
		}
	}
	return msgs, nil
}

// Hold takes a deploy lock on path for ttl and refreshes it every ttl/3 until
// release is called or ctx ends; if the holder dies, the lock expires after
// ttl. If the path is locked, the error is a *LockedError whose message says
// by what.
func (c *Checker) Hold(ctx context.Context, path string, ttl time.Duration, author string) (func(context.Context) error, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("holding lock %s: ttl must be positive, got %s", path, ttl)
	}
	l := Lock{Path: path, Type: Deploy, Author: author, ExpiresAt: c.svc.Now().Add(ttl)}
	if p, err := NormalizePath(path); err == nil {
		l.Path = p
		l.Default(nil)
	}
	held, err := c.svc.Lock(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("holding deploy lock: %w", err)
	}
	c.mu.Lock()
	c.held[held.ID] = true
	c.mu.Unlock()

	refreshCtx, stop := context.WithCancel(ctx)
	var (
		mu   sync.Mutex // guards cur
		cur  = held
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-refreshCtx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			next, err := c.svc.Refresh(refreshCtx, cur, c.svc.Now().Add(ttl))
			if err == nil {
				cur = next
			}
			mu.Unlock()
			if err != nil {
				return // removed or replaced by someone else: nothing left to refresh
			}
		}
	}()
	var once sync.Once
	release := func(ctx context.Context) error {
		var err error
		once.Do(func() {
			stop()
			<-done
			c.mu.Lock()
			delete(c.held, held.ID)
			c.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			err = c.svc.storage.Delete(ctx, cur)
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
				err = nil // gone or taken over after expiring: not ours to remove
			}
			if err != nil {
				err = fmt.Errorf("releasing deploy lock %s: %w", cur.Path, err)
			}
		})
		return err
	}
	return release, nil
}
