package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Agent is a Service acting for one Caller, whom the server that received
// the request verified: the caller's identity is the author of the locks it
// takes, and the rules for verified callers (rules.go: who owns a lock, how
// long a lock may last, who may place holds) apply to what it asks.
type Agent struct {
	s  *Service
	by Caller
}

// For returns s acting for by.
func (s *Service) For(by Caller) *Agent { return &Agent{s: s, by: by} }

// Lock takes l on behalf of the caller: the caller is the lock's author
// whatever l says; a hold, or any lock at a hold's path, needs Admin; a lock
// longer than its type's maximum (MaxDuration) is refused with a
// *TooLongError (wrapped as invalid). Otherwise it is Service.Lock.
func (a *Agent) Lock(ctx context.Context, l Lock) (Lock, error) {
	s, by := a.s, a.by
	if strings.TrimSpace(by.Name) == "" {
		return Lock{}, errors.New("locking: the caller has no name")
	}
	l.Author = by.Name
	if err := CheckReservedAuthor(l.Author); err != nil {
		return Lock{}, invalid(err)
	}
	p, err := NormalizePath(l.Path)
	if err != nil {
		return Lock{}, invalid(err)
	}
	l.Path = p
	if err := checkHold(by, p, l.Type); err != nil {
		return Lock{}, err
	}
	if err := a.checkDuration(p, l.Type, l.ExpiresAt); err != nil {
		return Lock{}, invalid(err)
	}
	return s.Lock(ctx, l)
}

// Extend moves the expiry of the lock of type t at path to until, on behalf
// of the caller: the lock must be the caller's own (compared as Unlock
// compares owners) unless the caller is Admin, a hold needs Admin, and until
// may be no further from now than the type's maximum.
func (a *Agent) Extend(ctx context.Context, path string, t Type, until time.Time) (Lock, error) {
	s, by := a.s, a.by
	if strings.TrimSpace(by.Name) == "" {
		return Lock{}, errors.New("extending: the caller has no name")
	}
	p, err := NormalizePath(path)
	if err != nil {
		return Lock{}, invalid(err)
	}
	if err := t.Validate(); err != nil {
		return Lock{}, invalid(err)
	}
	held, err := s.storage.Get(ctx, p)
	if err != nil {
		return Lock{}, fmt.Errorf("extending %s: %w", p, err)
	}
	if held.Type != t {
		return Lock{}, &TypeError{Lock: held, Want: t}
	}
	if err := checkHold(by, p, t); err != nil {
		return Lock{}, err
	}
	if !by.Admin && !a.owns(held.Author) {
		return Lock{}, &RefusedError{Caller: by, Reason: fmt.Sprintf("%s's lock on %s belongs to them: only they, or a caller with lock:admin, may extend it (%s may not)",
			held.Author, p, by.Name)}
	}
	if err := a.checkDuration(p, t, until); err != nil {
		return Lock{}, invalid(err)
	}
	if !ceilSecond(until).After(s.now()) {
		return Lock{}, invalid(fmt.Errorf("lock %s: expiry %s is not in the future", p, until.Format(time.RFC3339)))
	}
	return s.Refresh(ctx, held, until)
}

// owns reports whether a lock by author belongs to the caller.
func (a *Agent) owns(author string) bool { return a.s.ownerEqual(author, a.by.Name) }

// Unlock is Service.Unlock on behalf of the caller: a live lock whose
// author is someone else (WithOwnerEqual) is removed only when the caller is
// Admin (and then recorded as "unlocked by X (lock:admin)" where the storage
// keeps such records); otherwise the answer is a *ForbiddenError and nothing
// is removed. Expired locks block nothing and may be removed by anyone, as
// Prune does.
func (a *Agent) Unlock(ctx context.Context, path string, t Type, recursive bool) ([]Lock, error) {
	s, by := a.s, a.by
	if strings.TrimSpace(by.Name) == "" {
		return nil, errors.New("unlocking: the caller has no name")
	}
	p, err := NormalizePath(path)
	if err != nil {
		return nil, invalid(err)
	}
	if err := t.Validate(); err != nil {
		return nil, invalid(err)
	}
	var candidates []Lock
	if recursive {
		all, err := s.storage.List(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("unlocking %s: %w", p, err)
		}
		for _, l := range all {
			if l.Type == t {
				candidates = append(candidates, l)
			}
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("unlocking %s: %w of type %s at or beneath it", p, ErrNotFound, t)
		}
	} else {
		l, err := s.storage.Get(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("unlocking %s: %w", p, err)
		}
		if l.Type != t {
			return nil, &TypeError{Lock: l, Want: t}
		}
		candidates = []Lock{l}
	}
	now := s.now()
	var foreign []Lock
	for _, l := range candidates {
		if !a.owns(l.Author) && !l.Expired(now) {
			foreign = append(foreign, l)
		}
	}
	if len(foreign) > 0 && !by.Admin {
		return nil, &ForbiddenError{Caller: by, Locks: foreign}
	}
	removed := []Lock{}
	for _, l := range candidates {
		if !a.owns(l.Author) && !l.Expired(now) {
			// Recorded first: an admin's unlock never happens without its trace.
			msg := fmt.Sprintf("%s lock %s of %s unlocked by %s (lock:admin)", l.Type, l.Path, l.Author, by.Name)
			if err := a.recordUnlock(ctx, l, msg); err != nil {
				return removed, fmt.Errorf("unlocking %s: recording the unlock by %s: %w", l.Path, by.Name, err)
			}
		}
		// Delete carries the lock's version: a lock replaced since it was read
		// (by its author, say) is not removed on the strength of the old one.
		if err := s.storage.Delete(ctx, l); err != nil {
			if errors.Is(err, ErrNotFound) && recursive {
				continue
			}
			return removed, fmt.Errorf("unlocking %s: %w", l.Path, err)
		}
		s.observe(ctx, Released, l)
		removed = append(removed, l)
	}
	return removed, nil
}

// recordUnlock leaves the trace of an admin's unlock where the storage keeps one.
func (a *Agent) recordUnlock(ctx context.Context, l Lock, msg string) error {
	if r, ok := a.s.storage.(UnlockRecorder); ok {
		return r.RecordUnlock(ctx, l, msg)
	}
	return nil
}

// checkDuration refuses an expiry further from now than t's maximum.
func (a *Agent) checkDuration(path string, t Type, expires time.Time) error {
	max, ok := a.s.MaxDuration(t)
	now := a.s.now()
	if !ok || expires.IsZero() {
		return nil
	}
	if want := expires.Sub(now); want > max {
		return &TooLongError{Path: path, Type: t, Want: want, Max: max}
	}
	return nil
}
