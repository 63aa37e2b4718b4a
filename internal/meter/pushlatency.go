package meter

import (
	"sync"
	"time"
)

// pushTimes follows each push webhook to the first patch it causes in each
// environment, for stagehand_webhook_to_patch_seconds: a push (received here,
// or handed over by another replica's wake-up) waits for the next snapshot
// the source offers; that snapshot's revision is then awaited in every
// environment until its first patch there (observed), or until a pass over
// that revision ends without patching (the push changed nothing there, or
// the plan waits for a person: not a push's latency). Times are this
// process's monotonic clock.
type pushTimes struct {
	mu      sync.Mutex
	waiting time.Time         // the earliest push no snapshot has followed yet
	byEnv   map[string]pushed // environment → the revision a push brought
}

// pushed is a revision offered after a push, and when the push came.
type pushed struct {
	revision string
	at       time.Time
}

// push records a push received at at; an earlier one still waiting counts.
func (p *pushTimes) push(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting.IsZero() || at.Before(p.waiting) {
		p.waiting = at
	}
}

// offered is told that the source offers revision to envs: the push
// waiting, if any, brought it.
func (p *pushTimes) offered(revision string, envs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting.IsZero() {
		return
	}
	if p.byEnv == nil {
		p.byEnv = map[string]pushed{}
	}
	for _, env := range envs {
		if old, ok := p.byEnv[env]; ok && old.at.Before(p.waiting) {
			// An earlier push's revision still awaited: the newer revision
			// is what it will patch now, measured from the earlier push.
			p.byEnv[env] = pushed{revision: revision, at: old.at}
			continue
		}
		p.byEnv[env] = pushed{revision: revision, at: p.waiting}
	}
	p.waiting = time.Time{}
}

// patched is told of env's first patch of revision at at; it returns the time
// since the push that brought revision, once.
func (p *pushTimes) patched(env, revision string, at time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x, ok := p.byEnv[env]
	if !ok || x.revision != revision {
		return 0, false
	}
	delete(p.byEnv, env)
	return at.Sub(x.at), true
}

// passed is told that a pass over env's revision ended: a push awaited at
// that revision caused no patch in env.
func (p *pushTimes) passed(env, revision string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x, ok := p.byEnv[env]; ok && x.revision == revision {
		delete(p.byEnv, env)
	}
}
