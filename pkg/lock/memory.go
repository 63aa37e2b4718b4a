package lock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

var _ Storage = (*Memory)(nil)

// Memory is a Storage in process memory, for tests and single-process use.
type Memory struct {
	mu      sync.Mutex
	locks   map[string]Lock
	next    int
	unlocks []string // RecordUnlock's messages
}

// NewMemory returns an empty Memory storage.
func NewMemory() *Memory { return &Memory{locks: map[string]Lock{}} }

func (m *Memory) stamp(l Lock, id string) Lock {
	m.next++
	if id == "" {
		id = "mem-" + strconv.Itoa(m.next)
	}
	l.ID, l.Version = id, strconv.Itoa(m.next)
	return l
}

// Get implements Storage.
func (m *Memory) Get(_ context.Context, path string) (Lock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.locks[path]
	if !ok {
		return Lock{}, fmt.Errorf("getting lock %s: %w", path, ErrNotFound)
	}
	return l, nil
}

// List implements Storage.
func (m *Memory) List(_ context.Context, prefix string) ([]Lock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Lock{}
	for p, l := range m.locks {
		if within(p, prefix) {
			out = append(out, l)
		}
	}
	sortLocks(out)
	return out, nil
}

// Create implements Storage.
func (m *Memory) Create(_ context.Context, l Lock) (Lock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.locks[l.Path]; ok {
		return Lock{}, fmt.Errorf("creating lock %s: %w", l.Path, ErrExists)
	}
	l = m.stamp(l, "")
	m.locks[l.Path] = l
	return l, nil
}

// Replace implements Storage.
func (m *Memory) Replace(_ context.Context, old, l Lock) (Lock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[old.Path]
	if !ok || cur.ID != old.ID || cur.Version != old.Version || l.Path != old.Path {
		return Lock{}, fmt.Errorf("replacing lock %s: %w", old.Path, ErrConflict)
	}
	l = m.stamp(l, cur.ID)
	m.locks[l.Path] = l
	return l, nil
}

// Delete implements Storage.
func (m *Memory) Delete(_ context.Context, old Lock) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[old.Path]
	if !ok {
		return fmt.Errorf("deleting lock %s: %w", old.Path, ErrNotFound)
	}
	if cur.ID != old.ID || cur.Version != old.Version {
		return fmt.Errorf("deleting lock %s: %w", old.Path, ErrConflict)
	}
	delete(m.locks, old.Path)
	return nil
}
