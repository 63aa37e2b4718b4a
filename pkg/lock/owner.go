package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Caller is who asks the lock service for something, as the server that
// received the request verified it (pkg/lock verifies nothing itself).
type Caller struct {
	// Name is the verified identity: the author of the locks the caller
	// takes, and whose locks it may remove (compared with the lock's author
	// by the Service's WithOwnerEqual). A server with several kinds of
	// credentials writes it typed, "kind:name" ("github:alice", "token:ci").
	Name string
	// Admin may remove the live locks of others (the API's lock:admin scope).
	Admin bool
}

// ForbiddenError says that a caller tried to remove live locks that are
// not theirs without being an admin; nothing was removed.
type ForbiddenError struct {
	Caller Caller
	Locks  []Lock // the locks of others that stopped it
}

func (e *ForbiddenError) Error() string {
	owners := make([]string, len(e.Locks))
	for i, l := range e.Locks {
		owners[i] = fmt.Sprintf("%s (%s by %s)", l.Path, l.Type, l.Author)
	}
	return fmt.Sprintf("%s may remove only their own locks, and %s is not: removing the locks of others needs lock:admin",
		e.Caller.Name, strings.Join(owners, ", "))
}

// UnlockRecorder is implemented by storages that keep a trace of who
// removed a lock (Kubernetes: an Event on the Lock object), since the
// removed lock itself is gone.
type UnlockRecorder interface {
	RecordUnlock(ctx context.Context, removed Lock, message string) error
}

// UnlockBy is Unlock on behalf of by: a live lock whose author is someone
// else (WithOwnerEqual) is removed only when by.Admin (and then recorded as "unlocked by X
// (lock:admin)" where the storage keeps such records); otherwise the answer
// is a *ForbiddenError and nothing is removed. Expired locks block nothing
// and may be removed by anyone, as Prune does.
func (s *Service) UnlockBy(ctx context.Context, by Caller, path string, t Type, recursive bool) ([]Lock, error) {
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
		if !s.owns(l.Author, by.Name) && !l.Expired(now) {
			foreign = append(foreign, l)
		}
	}
	if len(foreign) > 0 && !by.Admin {
		return nil, &ForbiddenError{Caller: by, Locks: foreign}
	}
	removed := []Lock{}
	for _, l := range candidates {
		if !s.owns(l.Author, by.Name) && !l.Expired(now) {
			// Recorded first: an admin's unlock never happens without its trace.
			msg := fmt.Sprintf("%s lock %s of %s unlocked by %s (lock:admin)", l.Type, l.Path, l.Author, by.Name)
			if err := s.recordUnlock(ctx, l, msg); err != nil {
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
func (s *Service) recordUnlock(ctx context.Context, l Lock, msg string) error {
	if r, ok := s.storage.(UnlockRecorder); ok {
		return r.RecordUnlock(ctx, l, msg)
	}
	return nil
}
