package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// ErrUnreachable is matched (errors.Is) by an *UnreachableError.
var ErrUnreachable = errors.New("target unreachable")

// UnreachableError says a target's API server has not answered since Since.
type UnreachableError struct {
	Target string
	Since  time.Time
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("target %s unreachable since %s: %v", e.Target, e.Since.UTC().Format(time.RFC3339), e.Err)
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

func (e *UnreachableError) Unwrap() error { return e.Err }

// watchCache keeps, while Reconciler.Watch runs, one watch per workload kind
// of each target Plan has asked about, restricted to the selector label.
type watchCache struct {
	mu sync.Mutex
	// ctx is the lifetime of Reconciler.Watch, which every watch shares; it
	// is no request's context. nil while Watch does not run.
	ctx     context.Context
	targets map[targetKey]*targetWatch
	wg      sync.WaitGroup
	changed chan struct{} // closed and replaced on every event of any watch
}

type targetKey struct {
	name, namespace string
	client          kubernetes.Interface
}

// targetWatch is the watches of one target.
type targetWatch struct {
	name      string
	informers [workload.Count]cache.SharedIndexInformer
	// health is per kind: one kind's watch answering must not hide
	// another's failing.
	health  [workload.Count]health
	version atomic.Uint64 // bumped by every event

	mu      sync.Mutex
	built   *inventory // the inventory at builtAt
	builtAt uint64
}

// health remembers since when a target's list and watch calls fail.
type health struct {
	mu      sync.Mutex
	since   time.Time // zero while they succeed
	lastErr error
}

func (h *health) observe(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.since, h.lastErr = time.Time{}, nil
		return
	}
	if h.since.IsZero() {
		h.since = time.Now()
	}
	h.lastErr = err
}

func (h *health) failing() (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.lastErr
}

// failing returns since when the longest-failing kind's watch fails, and its
// last error; zero while every kind's succeeds.
func (tw *targetWatch) failing() (time.Time, error) {
	var since time.Time
	var err error
	for i := range tw.health {
		if s, e := tw.health[i].failing(); !s.IsZero() && (since.IsZero() || s.Before(since)) {
			since, err = s, e
		}
	}
	return since, err
}

// Watch keeps, until ctx ends, a watch of the Deployments, StatefulSets,
// DaemonSets, CronJobs (and Rollouts, for a target with a dynamic client)
// labelled with the selector label in each target that Plan or a rollout
// wait is asked about (started by the first of them for the target), and
// returns once every watch has stopped. While Watch runs, Plan reads those
// watches instead of listing (a steady-state pass sends no request to the
// targets; unlabelled workloads named like a service that has no labelled
// workload are read with one Get per kind), and rollout waits wake on watch
// events instead of polling. Apply still plans again from fresh Lists: what
// it patches is checked against the API server, not the cache. Without
// Watch (the one-shot CLI, which should not wait for a watch to fill) every
// Plan lists.
func (r *Reconciler) Watch(ctx context.Context) error {
	c := r.cache
	c.mu.Lock()
	if c.ctx != nil {
		c.mu.Unlock()
		return errors.New("watching targets: already watching")
	}
	c.ctx, c.targets, c.changed = ctx, map[targetKey]*targetWatch{}, make(chan struct{})
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	c.ctx, c.targets = nil, nil
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// of returns t's watches of the workloads labelled label, starting them on
// first use, or nil when Watch does not run.
func (c *watchCache) of(t Target, label string) *targetWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil || c.ctx.Err() != nil {
		return nil
	}
	k := targetKey{t.Name, t.Namespace, t.Client}
	if tw := c.targets[k]; tw != nil {
		return tw
	}
	tw := &targetWatch{name: t.Name}
	for i := range workload.Count {
		api, ok := workload.At(i).API(t.cluster(), t.Namespace)
		if !ok {
			continue // a kind the target cannot see: no informer
		}
		inf := newInformer(api, workload.At(i), label, &tw.health[i])
		_ = inf.SetTransform(workload.Strip(label)) // cannot fail before Run
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { tw.version.Add(1); c.notify() },
			UpdateFunc: func(any, any) { tw.version.Add(1); c.notify() },
			DeleteFunc: func(any) { tw.version.Add(1); c.notify() },
		})
		tw.informers[i] = inf
		ctx := c.ctx // read under c.mu: Watch clears it when it ends
		c.wg.Go(func() { inf.RunWithContext(ctx) })
	}
	c.targets[k] = tw
	return tw
}

// notify wakes every rollout wait.
func (c *watchCache) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed != nil {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// events returns a channel closed on the next watch event (nil, never
// closed, while Watch does not run).
func (c *watchCache) events() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		return nil
	}
	return c.changed
}

func newInformer(api workload.API, k *workload.Kind, label string, h *health) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = label
			obj, err := api.List(ctx, o)
			h.observe(err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = label
			w, err := api.Watch(ctx, o)
			h.observe(err)
			return w, err
		},
	}
	return cache.NewSharedIndexInformerWithOptions(lw, k.Example(), cache.SharedIndexInformerOptions{ObjectDescription: k.GVR().Resource})
}

// inventory returns t's workloads from the watches, waiting at most
// timeout for them to fill. A target whose watches cannot fill, or whose API
// server stopped answering them, is unreachable. The inventory is built
// again only after an event: callers share it and must not change it.
func (tw *targetWatch) inventory(ctx context.Context, t Target, label string, timeout time.Duration) (*inventory, error) {
	synced := func() bool {
		for _, inf := range tw.informers {
			if inf != nil && !inf.HasSynced() {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(timeout)
	for !synced() {
		if since, err := tw.failing(); !since.IsZero() {
			return nil, unreachable(tw.name, since, err)
		}
		if time.Now().After(deadline) {
			return nil, &UnreachableError{Target: tw.name, Since: deadline.Add(-timeout), Err: fmt.Errorf("watches not filled within %s", timeout)}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if since, err := tw.failing(); !since.IsZero() {
		return nil, unreachable(tw.name, since, err)
	}
	version := tw.version.Load() // before reading: an event from now on builds it again
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.built == nil || tw.builtAt != version {
		inv := newInventory(t, label)
		for i := range workload.Count {
			if tw.informers[i] == nil {
				continue
			}
			for _, o := range tw.informers[i].GetStore().List() {
				if w := fromObject(o); w != nil {
					inv.add(w)
				}
			}
		}
		tw.built, tw.builtAt = inv, version
	}
	inv := *tw.built
	inv.target = t // the caller's, with its Recorder
	return &inv, nil
}

// get reads the object of the informer of kind at namespace/name.
func (tw *targetWatch) get(kind, namespace, name string) (runtime.Object, bool) {
	_, i, err := workload.Named(kind)
	if err != nil || tw.informers[i] == nil {
		return nil, false
	}
	o, ok, err := tw.informers[i].GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	c, ok := o.(*workload.Cached)
	if !ok {
		return nil, false
	}
	return c.Object(), true
}

func fromObject(o any) *workload.Workload {
	switch o := o.(type) {
	case *workload.Cached:
		return o.Workload()
	case runtime.Object:
		if k := workload.Of(o); k != nil {
			return k.Workload(o)
		}
	}
	return nil
}
