package reconcile

import (
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/registry"
)

// SetRegistryClock makes r's digest cache read the time from now.
// It starts r's digest cache afresh: call it before r plans.
func SetRegistryClock(r *Reconciler, now func() time.Time) {
	r.o.registry.Now = now
	r.o.resolver = registry.New(r.o.registry)
}

// Watching reports whether r.Watch has begun and not ended (for tests that
// must know their plans read the watches).
func Watching(r *Reconciler) bool {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return r.cache.ctx != nil && r.cache.ctx.Err() == nil
}
