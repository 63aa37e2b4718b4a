package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// LockChecker reports deploy locks. A nil LockChecker means no locks. When
// it is also the LockHolder (WithLocks), it never reports the locks held
// through Hold, identified by their stored identity (not by author or
// message), so any lock it reports during an apply is someone else's.
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

// CachedLockLister is an optional extension of a LockLister whose
// BlockingWithinCached answers from the lock store's cache: cheap while the
// API server is busy with an apply, but it may miss a lock written a moment
// ago (for Kubernetes storage, the watch cache's lag: milliseconds). Plan
// reads it (Apply decides), and so does Apply for the re-check before each
// patch, after its own plan's fresh check; a lock taken mid-apply then stops
// the patches that begin once it has reached the cache.
type CachedLockLister interface {
	BlockingWithinCached(ctx context.Context, prefix, lockType string) (map[string][]string, error)
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

// recheck coalesces the lock re-checks before the patches of one target.
// Each patch needs the locks as they stand after it asked, so it waits for a
// query that started after it asked; one BlockingWithin query for the whole
// target serves every patch that asked while the previous query ran. A lock
// taken mid-apply still stops every patch that asks once the lock exists,
// at one query per round trip instead of one per workload.
type recheck struct {
	ctx    context.Context
	prefix string // <lockPath>/<target>
	query  func(ctx context.Context, prefix, lockType string) (map[string][]string, error)
	local  func() bool // the query reads a copy in this process: no need to share it

	mu      sync.Mutex
	running bool       // a query is in flight
	next    *lockQuery // the query that starts when it returns
}

type lockQuery struct {
	done   chan struct{}
	res    map[string][]string
	err    error
	askers int // callers waiting for it
}

func newRecheck(ctx context.Context, l LockLister, prefix string) *recheck {
	rc := &recheck{ctx: ctx, prefix: prefix, query: l.BlockingWithin}
	if c, ok := l.(CachedLockLister); ok {
		rc.query = c.BlockingWithinCached
		if lr, ok := l.(localReader); ok {
			rc.local = lr.ReadsLocally
		}
	}
	return rc
}

// localReader is an optional extension of a CachedLockLister (pkg/lock's
// Checker over Watched storage) that says when its cached answers are read
// from a copy in this process: each re-check then reads it itself, with no
// hand-off to a shared query, which on a busy machine costs more than the
// read.
type localReader interface{ ReadsLocally() bool }

// blocking returns the messages of the locks at path or any prefix of it, as
// LockChecker.Blocking does, from a query that started after the call.
func (rc *recheck) blocking(ctx context.Context, path string) ([]string, error) {
	if rc.local != nil && rc.local() {
		res, err := rc.query(ctx, rc.prefix, LockTypeDeploy)
		if err != nil {
			return nil, fmt.Errorf("checking locks within %s: %w", rc.prefix, err)
		}
		return covering(res, path), nil
	}
	rc.mu.Lock()
	if rc.next == nil {
		rc.next = &lockQuery{done: make(chan struct{})}
	}
	q := rc.next
	q.askers++
	if !rc.running {
		rc.running, rc.next = true, nil
		go rc.run(q)
	}
	rc.mu.Unlock()
	select {
	case <-q.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if q.err != nil {
		return nil, fmt.Errorf("checking locks within %s: %w", rc.prefix, q.err)
	}
	return covering(q.res, path), nil
}

// run answers q, then the query callers joined meanwhile, until none is left.
func (rc *recheck) run(q *lockQuery) {
	for q != nil {
		q.res, q.err = rc.query(rc.ctx, rc.prefix, LockTypeDeploy)
		close(q.done)
		rc.mu.Lock()
		q, rc.next = rc.next, nil
		rc.running = q != nil
		rc.mu.Unlock()
	}
}
