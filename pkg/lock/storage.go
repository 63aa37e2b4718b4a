package lock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Storage keeps locks, one per path. Implementations make Create atomic (of
// concurrent creators of one path exactly one succeeds) and honour the
// ID/Version preconditions of Replace and Delete.
type Storage interface {
	// Get returns the lock stored at path, or an error wrapping ErrNotFound.
	Get(ctx context.Context, path string) (Lock, error)
	// List returns the locks at prefix and beneath it ("" lists all), sorted by path.
	List(ctx context.Context, prefix string) ([]Lock, error)
	// Create stores l unless a lock exists at l.Path (an error wrapping ErrExists).
	Create(ctx context.Context, l Lock) (Lock, error)
	// Replace overwrites old (same ID and Version) with l, or fails with ErrConflict.
	Replace(ctx context.Context, old, l Lock) (Lock, error)
	// Delete removes old (same ID and Version), or fails with ErrConflict or ErrNotFound.
	Delete(ctx context.Context, old Lock) error
}

// cachedLister is implemented by storages that can answer List from a
// cache that is cheap to read but may be a moment behind (Kubernetes: the API
// server's watch cache, behind by the time a write takes to reach it).
type cachedLister interface {
	ListCached(ctx context.Context, prefix string) ([]Lock, error)
}

// Storage errors, checked with errors.Is.
var (
	ErrNotFound = errors.New("no lock")
	ErrExists   = errors.New("lock exists")
	ErrConflict = errors.New("lock changed concurrently")
)

// LockedError says that locks forbid an action at Path.
type LockedError struct {
	Path  string
	Type  Type // the action that was refused
	Locks []Lock
}

func (e *LockedError) Error() string {
	msgs := make([]string, len(e.Locks))
	for i, l := range e.Locks {
		msgs[i] = l.BlockingMessage(time.Local)
	}
	return strings.Join(msgs, "\n")
}

// TypeError says that an unlock named another type than the lock's.
type TypeError struct {
	Lock Lock
	Want Type
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("refusing to unlock %s: it is locked for %s, not %s (--type %s)",
		e.Lock.Path, e.Lock.Type.Friendly(), e.Want.Friendly(), e.Want)
}

// InvalidError marks a request that is wrong in itself (bad path, type or expiry).
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

func invalid(err error) error { return &InvalidError{err} }

func sortLocks(ls []Lock) {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Path < ls[j].Path })
}
