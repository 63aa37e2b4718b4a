package auth

import (
	"context"
	"sync"
	"time"
)

// Access is what one GitHub login may do in an environment: read it,
// approve and reject its plans (and take and remove its locks), and why.
type Access struct {
	Read    bool
	Approve bool
	// Why says what granted or refused it, shown to the person.
	Why string
}

// AccessPolicy decides a login's Access in env (for instance from the
// login's permission on the manifests repository and env's approvers rule);
// env "" asks about reading at all, and about locks on paths outside every
// environment's lock path. The web page asks it for every page, and the
// API's read rule is its Read (MayRead).
type AccessPolicy func(ctx context.Context, login, env string) (Access, error)

// MayRead is p's answer to whether login may read, as the API's ReadPolicy.
func (p AccessPolicy) MayRead(ctx context.Context, login string) (bool, string, error) {
	acc, err := p(ctx, login, "")
	if err != nil {
		return false, "", err
	}
	return acc.Read, acc.Why, nil
}

var _ ReadPolicy = AccessPolicy(nil)

// maxCachedAccess bounds CachedAccess's memory: past it the cache starts over.
const maxCachedAccess = 4096

// CachedAccess remembers p's answers for ttl per login and environment, so
// that a page view, its live updates, a form post and API calls do not each
// ask GitHub again. Errors are not remembered.
func CachedAccess(p AccessPolicy, ttl time.Duration, now func() time.Time) AccessPolicy {
	type entry struct {
		acc     Access
		expires time.Time
	}
	var (
		mu    sync.Mutex
		cache = map[[2]string]entry{}
	)
	return func(ctx context.Context, login, env string) (Access, error) {
		key := [2]string{login, env}
		mu.Lock()
		e, ok := cache[key]
		mu.Unlock()
		if ok && now().Before(e.expires) {
			return e.acc, nil
		}
		acc, err := p(ctx, login, env)
		if err != nil {
			return Access{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		if len(cache) >= maxCachedAccess {
			clear(cache)
		}
		cache[key] = entry{acc: acc, expires: now().Add(ttl)}
		return acc, nil
	}
}
