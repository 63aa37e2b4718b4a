package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Service applies the lock rules on top of a Storage: lock writes exactly one
// path and implies check; check walks every prefix; unlock must name the
// lock's type; expired locks never block; prune removes expired locks.
type Service struct {
	storage  Storage
	now      func() time.Time
	observer Observer
	// ownerEqual and maxDurations are the rules for verified callers (rules.go).
	ownerEqual   OwnerEqual
	maxDurations map[Type]time.Duration
}

// Change kinds an Observer hears.
const (
	Taken    = "taken"    // a lock was taken (an expired one at its path replaced)
	Released = "released" // a lock was removed by Unlock
	Pruned   = "pruned"   // an expired lock was removed by Prune
)

// Change is one lock taken or removed through a Service.
type Change struct {
	Kind string
	Lock Lock
	At   time.Time
}

// Observer hears the changes a Service makes (WithObserver).
type Observer func(ctx context.Context, c Change)

// New returns a Service storing locks in storage. It takes WithClock,
// WithObserver, WithOwnerEqual and WithMaxDurations.
func New(storage Storage, opts ...Option) (*Service, error) {
	o, err := newOptions("New", opts, optClock, optObserver, optOwnerEqual, optMaxDurations)
	if err != nil {
		return nil, fmt.Errorf("configuring locks: %w", err)
	}
	if storage == nil {
		return nil, errors.New("configuring locks: storage is required")
	}
	return &Service{storage: storage, now: o.now, observer: o.observer, ownerEqual: o.ownerEqual, maxDurations: o.maxDurations}, nil
}

// Now returns the service clock's current time.
func (s *Service) Now() time.Time { return s.now() }

// maxAttempts bounds the create/replace loop when racing other lockers.
const maxAttempts = 10

// Lock takes the lock l at exactly l.Path. It first checks every proper prefix
// of the path for a lock that blocks l.Type, then creates the lock atomically
// and checks the prefixes again, withdrawing the new lock if a blocking one
// appeared meanwhile (see confirm); an expired lock at the path is replaced. If the path is locked, the error is
// a *LockedError. CreatedAt and UpdatedAt are set from the clock; ExpiresAt
// is rounded up to a whole second.
func (s *Service) Lock(ctx context.Context, l Lock) (Lock, error) {
	p, err := NormalizePath(l.Path)
	if err != nil {
		return Lock{}, invalid(err)
	}
	l.Path = p
	now := s.now()
	l.CreatedAt, l.UpdatedAt = now, now
	l.ID, l.Version = "", ""
	if err := l.Validate(); err != nil {
		return Lock{}, invalid(err)
	}
	l.ExpiresAt = ceilSecond(l.ExpiresAt)
	if !l.ExpiresAt.After(now) {
		return Lock{}, invalid(fmt.Errorf("lock %s: expiry %s is not in the future", l.Path, l.ExpiresAt.Format(time.RFC3339)))
	}
	prefixes := Prefixes(p)
	blocking, err := s.blocking(ctx, prefixes[:len(prefixes)-1], l.Type)
	if err != nil {
		return Lock{}, err
	}
	if len(blocking) > 0 {
		return Lock{}, &LockedError{Path: p, Type: l.Type, Locks: blocking}
	}
	for range maxAttempts {
		created, err := s.storage.Create(ctx, l)
		if err == nil {
			held, err := s.confirm(ctx, created, prefixes[:len(prefixes)-1])
			if err == nil {
				s.observe(ctx, Taken, held)
			}
			return held, err
		}
		if !errors.Is(err, ErrExists) {
			return Lock{}, fmt.Errorf("taking lock %s: %w", p, err)
		}
		cur, err := s.storage.Get(ctx, p)
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile: try again
		}
		if err != nil {
			return Lock{}, fmt.Errorf("taking lock %s: %w", p, err)
		}
		if !cur.Expired(s.now()) {
			return Lock{}, &LockedError{Path: p, Type: l.Type, Locks: []Lock{cur}}
		}
		// Replace the expired lock: the precondition lets one replacer delete it,
		// and Create lets one locker take the path.
		if err := s.storage.Delete(ctx, cur); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
			return Lock{}, fmt.Errorf("replacing expired lock %s: %w", p, err)
		}
	}
	return Lock{}, fmt.Errorf("taking lock %s: %w after %d attempts", p, ErrConflict, maxAttempts)
}

// confirm re-checks the proper prefixes of a lock just created and withdraws
// it if a lock blocking it appeared there between the first check and the
// create. Checking and creating are two requests to the storage, so without
// this a parent lock (say an incident at apps/production) taken in that gap
// would coexist with a child lock (a deploy at apps/production/a/auth-app)
// whose taker goes on to deploy.
//
// The loser is determined by the paths alone: only a lock beneath another
// checks it, so of a parent and a child taken concurrently the child backs
// off and the parent stays. If the re-check sees no blocking parent, any
// parent that existed when the create landed has been removed since, and a
// parent taken after the re-check is the serial case "child, then parent",
// which the rules allow (locking never checks beneath a path). If the
// re-check itself fails, the lock is withdrawn too. A child may back off from a parent that itself backs off from a
// grandparent; the child then fails although the parent is gone, which errs
// on the side of not deploying. The window in which the withdrawn lock is
// visible (and may refuse a third locker) is one storage round trip.
func (s *Service) confirm(ctx context.Context, created Lock, parents []string) (Lock, error) {
	blocking, err := s.blocking(ctx, parents, created.Type)
	if err == nil && len(blocking) == 0 {
		return created, nil
	}
	if err == nil {
		err = &LockedError{Path: created.Path, Type: created.Type, Locks: blocking}
	} else {
		err = fmt.Errorf("confirming lock %s: %w", created.Path, err)
	}
	if derr := s.storage.Delete(ctx, created); derr != nil && !errors.Is(derr, ErrNotFound) && !errors.Is(derr, ErrConflict) {
		return Lock{}, fmt.Errorf("withdrawing lock %s (it stays until %s): %w (withdrawn because: %w)",
			created.Path, created.ExpiresAt.Format(time.RFC3339), derr, err)
	}
	return Lock{}, err
}

// ceilSecond rounds t up to a whole second: expiries are kept in seconds
// (the REST API's Unix timestamps, kubectl's column), never shortened.
func ceilSecond(t time.Time) time.Time {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		return tr.Add(time.Second)
	}
	return t
}

// Refresh moves the expiry of a held lock (same ID and Version as held) to
// expires, failing with ErrConflict if the lock changed since.
func (s *Service) Refresh(ctx context.Context, held Lock, expires time.Time) (Lock, error) {
	l := held
	l.UpdatedAt, l.ExpiresAt = s.now(), ceilSecond(expires)
	out, err := s.storage.Replace(ctx, held, l)
	if err != nil {
		return Lock{}, fmt.Errorf("refreshing lock %s: %w", held.Path, err)
	}
	return out, nil
}

// Get returns the lock stored at exactly path (expired or not).
func (s *Service) Get(ctx context.Context, path string) (Lock, error) {
	p, err := NormalizePath(path)
	if err != nil {
		return Lock{}, invalid(err)
	}
	return s.storage.Get(ctx, p)
}

// Check returns the locks that forbid an action of type t at path: with
// recursive, locks at every prefix of path, else only at path itself.
func (s *Service) Check(ctx context.Context, path string, t Type, recursive bool) ([]Lock, error) {
	p, err := NormalizePath(path)
	if err != nil {
		return nil, invalid(err)
	}
	if err := t.Validate(); err != nil {
		return nil, invalid(err)
	}
	paths := []string{p}
	if recursive {
		paths = Prefixes(p)
	}
	return s.blocking(ctx, paths, t)
}

// Within returns the locks that forbid an action of type t at prefix, at
// any prefix of it or anywhere beneath it: everything Check would report for
// prefix or for a path beneath it, read with one List of the storage.
func (s *Service) Within(ctx context.Context, prefix string, t Type) ([]Lock, error) {
	return s.within(ctx, prefix, t, s.storage.List)
}

// WithinCached is Within read from the storage's cache where it has one
// (Kubernetes: the API server's watch cache, without waiting for it to catch
// up), so it is cheap while the API server is busy but may miss a lock
// written a moment ago. For re-checks that a fresh read preceded, such as the
// reconciler's before each patch; never to decide who gets a lock.
func (s *Service) WithinCached(ctx context.Context, prefix string, t Type) ([]Lock, error) {
	list := s.storage.List
	if c, ok := s.storage.(cachedLister); ok {
		list = c.ListCached
	}
	return s.within(ctx, prefix, t, list)
}

func (s *Service) within(ctx context.Context, prefix string, t Type, list func(context.Context, string) ([]Lock, error)) ([]Lock, error) {
	p, err := NormalizePath(prefix)
	if err != nil {
		return nil, invalid(err)
	}
	if err := t.Validate(); err != nil {
		return nil, invalid(err)
	}
	all, err := list(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("checking locks within %s: %w", p, err)
	}
	now := s.now()
	out := []Lock{}
	for _, l := range all {
		if (within(p, l.Path) || within(l.Path, p)) && l.Blocks(t, now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// batchGetter is implemented by storages that read the locks at several
// paths in one request (Kubernetes: one list instead of a GET per prefix,
// which also finds Lock objects made by hand under names of their own).
type batchGetter interface {
	// GetAll returns the locks stored at any of paths, sorted by path.
	GetAll(ctx context.Context, paths []string) ([]Lock, error)
}

func (s *Service) blocking(ctx context.Context, paths []string, t Type) ([]Lock, error) {
	var found []Lock
	if bg, ok := s.storage.(batchGetter); ok && len(paths) > 0 {
		ls, err := bg.GetAll(ctx, paths)
		if err != nil {
			return nil, fmt.Errorf("checking locks at %s: %w", paths[len(paths)-1], err)
		}
		found = ls
	} else {
		for _, p := range paths {
			l, err := s.storage.Get(ctx, p)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("checking lock %s: %w", p, err)
			}
			found = append(found, l)
		}
	}
	now := s.now()
	out := []Lock{}
	for _, l := range found {
		if l.Blocks(t, now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// Unlock removes the lock at path, which must be of type t (a *TypeError
// otherwise; an error wrapping ErrNotFound when there is none). With
// recursive, it removes every lock of type t at and beneath path instead and
// fails with ErrNotFound only if there was none. It returns the removed locks.
func (s *Service) Unlock(ctx context.Context, path string, t Type, recursive bool) ([]Lock, error) {
	p, err := NormalizePath(path)
	if err != nil {
		return nil, invalid(err)
	}
	if err := t.Validate(); err != nil {
		return nil, invalid(err)
	}
	if !recursive {
		l, err := s.storage.Get(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("unlocking %s: %w", p, err)
		}
		if l.Type != t {
			return nil, &TypeError{Lock: l, Want: t}
		}
		if err := s.storage.Delete(ctx, l); err != nil {
			return nil, fmt.Errorf("unlocking %s: %w", p, err)
		}
		s.observe(ctx, Released, l)
		return []Lock{l}, nil
	}
	all, err := s.storage.List(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("unlocking %s: %w", p, err)
	}
	removed := []Lock{}
	for _, l := range all {
		if l.Type != t {
			continue
		}
		err := s.storage.Delete(ctx, l)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return removed, fmt.Errorf("unlocking %s: %w", l.Path, err)
		}
		if err == nil { // else removed meanwhile, by someone else, who tells
			s.observe(ctx, Released, l)
		}
		removed = append(removed, l)
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("unlocking %s: %w of type %s at or beneath it", p, ErrNotFound, t)
	}
	return removed, nil
}

// Prune removes the expired locks at and beneath prefix ("" for all) and
// returns them. A lock refreshed meanwhile is left alone.
func (s *Service) Prune(ctx context.Context, prefix string) ([]Lock, error) {
	prefix, err := normalizePrefix(prefix)
	if err != nil {
		return nil, err
	}
	all, err := s.storage.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("pruning locks under %q: %w", prefix, err)
	}
	now := s.now()
	pruned := []Lock{}
	for _, l := range all {
		if !l.Expired(now) {
			continue
		}
		err := s.storage.Delete(ctx, l)
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return pruned, fmt.Errorf("pruning lock %s: %w", l.Path, err)
		}
		s.observe(ctx, Pruned, l)
		pruned = append(pruned, l)
	}
	return pruned, nil
}

// List returns the locks at and beneath prefix ("" for all), expired ones included.
func (s *Service) List(ctx context.Context, prefix string) ([]Lock, error) {
	prefix, err := normalizePrefix(prefix)
	if err != nil {
		return nil, err
	}
	ls, err := s.storage.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("listing locks under %q: %w", prefix, err)
	}
	return ls, nil
}

// normalizePrefix validates the prefix of a List or Prune: "" (every lock)
// or a lock path, lowercased.
func normalizePrefix(prefix string) (string, error) {
	if prefix == "" {
		return "", nil
	}
	p, err := NormalizePath(prefix)
	if err != nil {
		return "", invalid(err)
	}
	return p, nil
}

// observe tells the observer, if any, about a change made.
func (s *Service) observe(ctx context.Context, kind string, l Lock) {
	if s.observer != nil {
		s.observer(ctx, Change{Kind: kind, Lock: l, At: s.now()})
	}
}
