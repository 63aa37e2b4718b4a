package wire

import (
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// kubeParts are the Kubernetes side of a process, each built once: the
// client cache, the state cluster's client on its API server's clock and
// the state store over it, each environment's targets, and the lock
// service.
type kubeParts struct {
	cfg *config.Config
	o   *options

	mu          sync.Mutex
	clients     *Clients
	stateClock  *clock.Remote
	stateClient kubernetes.Interface
	store       *state.Store
	targets     map[string][]reconcile.Target
	locks       *lock.Service
}

// Clients returns the process's Kubernetes client cache (WithRESTConfig,
// WithWrapTransport and WithRateLimit apply).
func (k *kubeParts) Clients() (*Clients, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.clientsLocked()
}

func (k *kubeParts) clientsLocked() (*Clients, error) {
	if k.clients != nil {
		return k.clients, nil
	}
	c, err := newClients(*k.o)
	if err != nil {
		return nil, err
	}
	k.clients = c
	return c, nil
}

// StateClock is the state cluster's API server's clock, followed from the
// answers to StateClient; until the first answer it is this host's clock
// (WithLocalClock).
func (k *kubeParts) StateClock() *clock.Remote { return k.stateClock }

// StateClient returns the client of the state namespace's cluster
// (state.kubeconfig and state.context). It is its own client, not the
// cache's, because it follows the API server's clock (StateClock) from its
// responses: Lease renewals, state reads and writes.
func (k *kubeParts) StateClient() (kubernetes.Interface, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stateClientLocked()
}

func (k *kubeParts) stateClientLocked() (kubernetes.Interface, error) {
	if k.stateClient != nil {
		return k.stateClient, nil
	}
	c, err := k.clientsLocked()
	if err != nil {
		return nil, err
	}
	rc, err := c.RESTConfig(k.cfg.State.Kubeconfig, k.cfg.State.Context)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	rc.Wrap(k.stateClock.Transport)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("state: building client: %w", err)
	}
	k.stateClient = cs
	return cs, nil
}

// Store returns the state store (internal/state) in state.namespace, over
// StateClient.
func (k *kubeParts) Store() (*state.Store, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.store != nil {
		return k.store, nil
	}
	c, err := k.stateClientLocked()
	if err != nil {
		return nil, err
	}
	k.store = state.NewStore(c, k.cfg.State.Namespace)
	return k.store, nil
}

// Targets returns environment env's reconcile targets, each with the cached
// client of its cluster and, with WithRecorders, its Event recorder.
func (k *kubeParts) Targets(env string) ([]reconcile.Target, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.targetsLocked(env)
}

func (k *kubeParts) targetsLocked(env string) ([]reconcile.Target, error) {
	if t, ok := k.targets[env]; ok {
		return t, nil
	}
	c, err := k.clientsLocked()
	if err != nil {
		return nil, err
	}
	t, err := c.Targets(k.cfg, env, k.o.recorders)
	if err != nil {
		return nil, err
	}
	k.targets[env] = t
	return t, nil
}

// AllTargets returns the targets of every configured environment, by name.
func (k *kubeParts) AllTargets() (map[string][]reconcile.Target, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string][]reconcile.Target, len(k.cfg.Environments))
	for _, env := range k.cfg.EnvironmentNames() {
		t, err := k.targetsLocked(env)
		if err != nil {
			return nil, err
		}
		out[env] = t
	}
	return out, nil
}

// LockService returns the lock service of locks: (see LockService), on the
// state cluster's clock unless WithClock says otherwise, telling
// WithLockObserver's observer about every change.
func (k *kubeParts) LockService() (*lock.Service, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lockServiceLocked()
}

func (k *kubeParts) lockServiceLocked() (*lock.Service, error) {
	if k.locks != nil {
		return k.locks, nil
	}
	c, err := k.clientsLocked()
	if err != nil {
		return nil, err
	}
	o := *k.o
	if o.now == nil {
		o.now = k.stateClock.Now
	}
	svc, err := lockService(c, k.cfg, o)
	if err != nil {
		return nil, err
	}
	k.locks = svc
	return svc, nil
}

// Close stops the watches of the built clients (kubeconfig and cluster
// Secrets of targets).
func (k *kubeParts) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.clients != nil {
		k.clients.Close()
	}
}
