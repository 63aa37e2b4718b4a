package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

var (
	_ Storage      = (*Watched)(nil)
	_ cachedLister = (*Watched)(nil)
)

// Watched is Kubernetes lock storage whose ListCached answers from a local
// copy of the namespace's Lock objects that one watch keeps current: reading
// it costs no request, and it is behind the API server by a watch event's
// latency (milliseconds). Everything else, and every cached read before Run
// has caught up, after it stopped or while the watch reports a failure, goes
// to the API server as with Kubernetes. (While the API server cannot be
// reached at all the copy is the last state seen; no lock can be written
// there meanwhile, and every consistent read — the plan's check, taking the
// apply lock — fails.)
type Watched struct {
	*Kubernetes
	informer cache.SharedIndexInformer
	started  atomic.Bool

	mu       sync.Mutex
	broken   bool   // the watch failed and has not caught up since
	brokenAt string // the resource version it had reached when it failed
}

// Watched returns k with a watch that Run keeps.
func (k *Kubernetes) Watched() *Watched {
	res := k.res()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	w := &Watched{
		Kubernetes: k,
		informer:   cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{ObjectDescription: "locks.stagehand.io"}),
	}
	// Only before Run, which is not started yet: this cannot fail.
	_ = w.informer.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.broken, w.brokenAt = true, w.informer.LastSyncResourceVersion()
	})
	return w
}

// Run keeps the watch until ctx ends, then returns nil once it has stopped.
// It returns an error at once when the Lock objects cannot be listed (no
// CRD, no access, no API server): the informer would retry forever. A
// Watched runs once.
func (w *Watched) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("watching locks: already started")
	}
	if _, err := w.res().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return wrap("watching", "objects in namespace "+w.namespace, err)
	}
	w.informer.RunWithContext(ctx)
	return nil
}

// Synced reports whether the watch has caught up with the API server once.
func (w *Watched) Synced() bool { return w.informer.HasSynced() }

// fresh reports whether the local copy can be trusted: the watch runs and
// has not failed since it last caught up.
func (w *Watched) fresh() bool {
	if !w.informer.HasSynced() || w.informer.IsStopped() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.broken {
		return true
	}
	// The reflector lists or watches again after a failure; it has caught up
	// once its resource version moved (an event, a relist or a bookmark).
	if w.informer.LastSyncResourceVersion() != w.brokenAt {
		w.broken = false
		return true
	}
	return false
}

// ListCached implements the cached reads: the locks at prefix and beneath
// it from the watch's copy, or, while the watch is failing, from the API
// server's watch cache.
func (w *Watched) ListCached(ctx context.Context, prefix string) ([]Lock, error) {
	if !w.fresh() {
		return w.Kubernetes.ListCached(ctx, prefix)
	}
	out := []Lock{}
	for _, o := range w.informer.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		l, err := fromObject(u)
		if err != nil {
			return nil, fmt.Errorf("reading locks: %w", err)
		}
		if within(l.Path, prefix) {
			out = append(out, l)
		}
	}
	sortLocks(out)
	return out, nil
}

// Watched returns the service's storage when it is a *Watched, for the
// process that runs its watch.
func (s *Service) Watched() (*Watched, bool) {
	w, ok := s.storage.(*Watched)
	return w, ok
}

// ReadsLocally reports whether BlockingWithinCached is answered, right now,
// from a watch in this process (pkg/reconcile then re-checks each patch with
// its own read instead of sharing queries).
func (c *Checker) ReadsLocally() bool {
	w, ok := c.svc.Watched()
	return ok && w.fresh()
}
