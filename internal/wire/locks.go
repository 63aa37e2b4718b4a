package wire

import (
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// LockService returns the lock service over the store of locks.storage:
// Kubernetes objects in locks.namespace of the state cluster
// (state.kubeconfig and state.context, through c) or, for memory, a store
// private to this process. It reads WithClock and WithLockObserver.
func LockService(c *Clients, cfg *config.Config, opts ...Option) (*lock.Service, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("locks: %w", err)
	}
	return lockService(c, cfg, o)
}

// lockService is LockService with its options applied.
func lockService(c *Clients, cfg *config.Config, o options) (*lock.Service, error) {
	var st lock.Storage
	switch cfg.Locks.Storage {
	case "memory":
		st = lock.NewMemory()
	case "kubernetes", "":
		rc, err := c.RESTConfig(cfg.State.Kubeconfig, cfg.State.Context)
		if err != nil {
			return nil, fmt.Errorf("locks: %w", err)
		}
		ns := cfg.Locks.Namespace
		if ns == "" {
			ns = "stagehand"
		}
		k, err := lock.NewKubernetesForConfig(rc, ns)
		if err != nil {
			return nil, fmt.Errorf("locks: %w", err)
		}
		// Reads like plain Kubernetes storage until a long-running process
		// (the daemon) runs its watch: then the re-checks before each patch
		// read the watch (lock.Watched).
		st = k.Watched()
	default:
		return nil, fmt.Errorf("locks.storage: unknown storage %q; accepted: kubernetes, memory", cfg.Locks.Storage)
	}
	max, err := cfg.Locks.MaxDuration.Durations()
	if err != nil {
		return nil, err
	}
	lopts := []lock.Option{lock.WithMaxDurations(max), lock.WithOwnerEqual(LockOwnerEqual)}
	if o.now != nil {
		lopts = append(lopts, lock.WithClock(o.now))
	}
	if o.lockObserver != nil {
		lopts = append(lopts, lock.WithObserver(o.lockObserver))
	}
	svc, err := lock.New(st, lopts...)
	if err != nil {
		return nil, fmt.Errorf("locks: %w", err)
	}
	return svc, nil
}

// LockOwnerEqual compares a lock's author with a caller's name as typed
// identities (kind:name, internal/identity's Equal): a GitHub login spelled
// like a token's name is not that token, and a bare name from a record
// written before authors were typed is no caller's (only lock:admin removes
// its lock).
func LockOwnerEqual(author, caller string) bool {
	return identity.Parse(author).Equal(identity.Parse(caller))
}
