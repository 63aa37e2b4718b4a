package reconcile

import "time"

// SetRegistryClock makes r's digest cache read the time from now.
func SetRegistryClock(r *Reconciler, now func() time.Time) { r.o.registry.state.now = now }
