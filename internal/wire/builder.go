package wire

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Builder builds the components of one process from its configuration, each
// at most once: every caller of Clients, StateClient, Store, Targets,
// LockService, Reconciler, Source, Webhook and GitHub gets the same object,
// so a process has one set of Kubernetes clients (one per kubeconfig and
// context) and one HTTP transport to GitHub (HTTPTransport: the GitHub
// client, the git source's App tokens, and the API's checks of GitHub user
// tokens and the web page's OAuth, which internal/cli builds over it), whoever
// asks.
//
// A Builder builds lazily: a command that needs only the lock service
// never reads a webhook secret or a GitHub App key. A part that failed to
// build is built again at the next call. Close stops what the built clients
// watch.
//
// It is made of three parts, each building its own under its own lock, and
// their methods are the Builder's: the Kubernetes side (kubeParts: Clients,
// StateClock, StateClient, Store, Targets, AllTargets, LockService, Close),
// the ways to GitHub (gitHubParts: HTTPTransport, GitHub, Access,
// Authenticator) and what deploys (deployParts: Reconciler, Source,
// BranchSource, Webhook, Pushes, Tracing, Collectors). A part asks only
// the parts before it in that order, so the locks are never taken in a
// cycle.
type Builder struct {
	cfg *config.Config
	o   options

	*kubeParts
	*gitHubParts
	*deployParts
}

// New returns the builder of cfg's components. Options given here reach
// every part they concern (see each Option).
func New(cfg *config.Config, opts ...Option) (*Builder, error) {
	if cfg == nil {
		return nil, errors.New("configuring builder: nil configuration")
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring builder: %w", err)
	}
	// The state cluster's API server's clock, followed from the answers to
	// the state client (StateClient), is what the lock service and the git
	// source stamp times with.
	b := &Builder{cfg: cfg, o: o}
	b.kubeParts = &kubeParts{cfg: cfg, o: &b.o, stateClock: clock.NewRemote(o.localNow()), targets: map[string][]reconcile.Target{}}
	b.gitHubParts = &gitHubParts{cfg: cfg, o: &b.o, kube: b.kubeParts}
	b.deployParts = &deployParts{cfg: cfg, o: &b.o, kube: b.kubeParts, github: b.gitHubParts, registryRequests: registryRequests()}
	return b, nil
}

// Config is the configuration the builder builds from.
func (b *Builder) Config() *config.Config { return b.cfg }

// Pushes registers a trigger for the pushes to one branch of one
// repository on a webhook receiver (the daemon's push wake-up).
type Pushes struct {
	receiver    *webhook.Receiver
	url, branch string
}

// OnPush calls trigger for every push event to the branch.
func (p *Pushes) OnPush(trigger func()) error {
	h, err := webhook.OnPush(p.url, p.branch, trigger)
	if err != nil {
		return fmt.Errorf("configuring push webhook: %w", err)
	}
	p.receiver.Handle("push", h)
	return nil
}

// DaemonOptions are the options of the daemon's Builder, replica identity
// on log: its reconciler applies as lock.ReconcilerAuthor on every replica and
// takes over the deploy locks a killed replica left (under that name or its
// former one, lock.ReservedAuthor), and each target's Events are written at
// once by an EventRecorders reporting as "stagehand-reconciler@identity" (an
// Event's source is not an identity).
func DaemonOptions(identity string, log logr.Logger) []Option {
	return []Option{WithAuthor(lock.ReconcilerAuthor), WithTakeOverOwnLocks(lock.ReservedAuthor),
		WithRecorders(EventRecorders(log, lock.ReservedAuthor+"@"+identity, lock.ReservedAuthor))}
}

// ManifestOptions returns the pkg/manifest options of the manifest: section.
func (b *Builder) ManifestOptions() []manifest.Option { return ManifestOptions(b.cfg.Manifest) }
