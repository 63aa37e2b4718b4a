package reconcile

import "time"

// SetRegistryClock makes r's digest cache read the time from now.
func SetRegistryClock(r *Reconciler, now func() time.Time) { r.o.registry.state.now = now }

// Watching reports whether r.Watch has begun and not ended (for tests that
// must know their plans read the watches).
func Watching(r *Reconciler) bool {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return r.cache.ctx != nil && r.cache.ctx.Err() == nil
}
