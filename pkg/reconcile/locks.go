package reconcile

import (
	"context"
	"slices"
	"strings"
	"time"
)

// LockChecker reports deploy locks. A nil LockChecker means no locks.
type LockChecker interface {
	// Blocking returns the locks that forbid an action of type lockType
	// ("deploy") at path, checking every prefix.
	Blocking(ctx context.Context, path, lockType string) ([]string, error)
}

// LockLister is an optional extension of a LockChecker that answers for a
// whole subtree at once: a plan with many services then costs one lock query
// per target instead of one per service. Without it, Plan calls Blocking once
// per changed target and service.
type LockLister interface {
	// BlockingWithin returns, keyed by lock path, the messages of the locks
	// that forbid an action of type lockType at prefix, at any prefix of it
	// (as Blocking would report for prefix) or at any path beneath it.
	BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error)
}

// LockHolder takes deploy locks while a plan is applied.
type LockHolder interface {
	// Hold takes a lock of type "deploy" on path for ttl (refreshing is the
	// caller's business) and returns release.
	Hold(ctx context.Context, path string, ttl time.Duration, author string) (release func(context.Context) error, err error)
}

// LockTypeDeploy is the lock type checked before and held during a deploy.
const LockTypeDeploy = "deploy"

// lockPath joins an environment's lock path prefix with more segments.
func lockPath(prefix string, parts ...string) string {
	p := prefix
	for _, s := range parts {
		if p == "" {
			p = s
			continue
		}
		p += "/" + s
	}
	return p
}

// covering returns the messages of the locks in byPath (keyed by lock path)
// at path or at any prefix of it, shortest lock path first, as Blocking
// reports them. Paths compare case-insensitively: lock paths are lowercase.
func covering(byPath map[string][]string, path string) []string {
	path = strings.ToLower(path)
	var keys []string
	for p := range byPath {
		if lp := strings.ToLower(p); path == lp || strings.HasPrefix(path, lp+"/") {
			keys = append(keys, p)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, byPath[k]...)
	}
	return out
}
