package reconcile

import (
	"context"
	"time"
)

// LockChecker reports deploy locks. A nil LockChecker means no locks.
type LockChecker interface {
	// Blocking returns the locks that forbid an action of type lockType
	// ("deploy") at path, checking every prefix.
	Blocking(ctx context.Context, path, lockType string) ([]string, error)
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
