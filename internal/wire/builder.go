package wire

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
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
type Builder struct {
	cfg *config.Config
	o   options

	mu          sync.Mutex
	clients     *Clients
	transport   http.RoundTripper
	stateClock  *clock.Remote
	stateClient kubernetes.Interface
	store       *state.Store
	targets     map[string][]reconcile.Target
	locks       *lock.Service
	checker     *lock.Checker
	rec         *reconcile.Reconciler
	source      *gitsource.Source
	webhook     *webhook.Receiver
	webhookDone bool
	gh          *github.Client
	ghDone      bool
	access      auth.AccessPolicy
	authn       *auth.Authenticator
	// registryRequests counts the reconciler's registry requests
	// (registrymetrics.go).
	registryRequests *prometheus.CounterVec
	tracing          *tracing.Provider
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
	return &Builder{cfg: cfg, o: o, stateClock: clock.NewRemote(o.localNow()), targets: map[string][]reconcile.Target{},
		registryRequests: registryRequests()}, nil
}

// Config is the configuration the builder builds from.
func (b *Builder) Config() *config.Config { return b.cfg }

// Clients returns the process's Kubernetes client cache (WithRESTConfig,
// WithWrapTransport and WithRateLimit apply).
func (b *Builder) Clients() (*Clients, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clientsLocked()
}

func (b *Builder) clientsLocked() (*Clients, error) {
	if b.clients != nil {
		return b.clients, nil
	}
	c, err := newClients(b.o)
	if err != nil {
		return nil, err
	}
	b.clients = c
	return c, nil
}

// HTTPTransport returns the process's transport to GitHub (the REST API,
// the App token exchange of the git source, user-token checks and the web
// page's OAuth): WithHTTPTransport's, else HTTPTransport(source), which
// trusts source.caFile. One transport keeps one pool of connections.
func (b *Builder) HTTPTransport() (http.RoundTripper, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.transportLocked()
}

func (b *Builder) transportLocked() (http.RoundTripper, error) {
	if b.transport != nil {
		return b.transport, nil
	}
	rt := b.o.httpTransport
	if rt == nil {
		var err error
		if rt, err = HTTPTransport(b.cfg.Source); err != nil {
			return nil, err
		}
	}
	b.transport = rt
	return rt, nil
}

// StateClock is the state cluster's API server's clock, followed from the
// answers to StateClient; until the first answer it is this host's clock
// (WithLocalClock).
func (b *Builder) StateClock() *clock.Remote { return b.stateClock }

// StateClient returns the client of the state namespace's cluster
// (state.kubeconfig and state.context). It is its own client, not the
// cache's, because it follows the API server's clock (StateClock) from its
// responses: Lease renewals, state reads and writes.
func (b *Builder) StateClient() (kubernetes.Interface, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stateClientLocked()
}

func (b *Builder) stateClientLocked() (kubernetes.Interface, error) {
	if b.stateClient != nil {
		return b.stateClient, nil
	}
	c, err := b.clientsLocked()
	if err != nil {
		return nil, err
	}
	rc, err := c.RESTConfig(b.cfg.State.Kubeconfig, b.cfg.State.Context)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	rc.Wrap(b.stateClock.Transport)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("state: building client: %w", err)
	}
	b.stateClient = cs
	return cs, nil
}

// Store returns the state store (internal/state) in state.namespace, over
// StateClient.
func (b *Builder) Store() (*state.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.store != nil {
		return b.store, nil
	}
	c, err := b.stateClientLocked()
	if err != nil {
		return nil, err
	}
	b.store = state.NewStore(c, b.cfg.State.Namespace)
	return b.store, nil
}

// Targets returns environment env's reconcile targets, each with the cached
// client of its cluster and, with WithRecorders, its Event recorder.
func (b *Builder) Targets(env string) ([]reconcile.Target, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.targetsLocked(env)
}

func (b *Builder) targetsLocked(env string) ([]reconcile.Target, error) {
	if t, ok := b.targets[env]; ok {
		return t, nil
	}
	c, err := b.clientsLocked()
	if err != nil {
		return nil, err
	}
	t, err := c.Targets(b.cfg, env, b.o.recorders)
	if err != nil {
		return nil, err
	}
	b.targets[env] = t
	return t, nil
}

// AllTargets returns the targets of every configured environment, by name.
func (b *Builder) AllTargets() (map[string][]reconcile.Target, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string][]reconcile.Target, len(b.cfg.Environments))
	for _, env := range b.cfg.EnvironmentNames() {
		t, err := b.targetsLocked(env)
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
func (b *Builder) LockService() (*lock.Service, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lockServiceLocked()
}

func (b *Builder) lockServiceLocked() (*lock.Service, error) {
	if b.locks != nil {
		return b.locks, nil
	}
	c, err := b.clientsLocked()
	if err != nil {
		return nil, err
	}
	o := b.o
	if o.now == nil {
		o.now = b.stateClock.Now
	}
	svc, err := lockService(c, b.cfg, o)
	if err != nil {
		return nil, err
	}
	b.locks = svc
	return svc, nil
}

// Reconciler returns the reconciler of the registry: and workloads:
// sections, checking the lock service's locks under WithAuthor's name (the
// reconciler's own locks taken over with WithTakeOverOwnLocks), followed by
// WithReconcileOptions.
func (b *Builder) Reconciler() (*reconcile.Reconciler, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rec != nil {
		return b.rec, nil
	}
	svc, err := b.lockServiceLocked()
	if err != nil {
		return nil, err
	}
	if b.checker == nil {
		var copts []lock.Option
		if b.o.takeOverOwnLocks {
			// Only the leader applies, under one fixed author: a new leader takes over
			// the deploy lock a killed one left instead of waiting for it to expire.
			copts = append(copts, lock.TakeOverOwnLocks(b.o.author, b.o.formerAuthors...))
		}
		if b.checker, err = lock.NewChecker(svc, nil, copts...); err != nil {
			return nil, fmt.Errorf("locks: %w", err)
		}
	}
	// The options given with WithReconcileOptions come after: a test's
	// registry transport replaces the counted one.
	ropts := []reconcile.Option{reconcile.WithLocks(b.checker, b.checker), reconcile.WithRegistryTransport(b.registryTransport())}
	if b.o.author != "" {
		ropts = append(ropts, reconcile.WithAuthor(b.o.author))
	}
	rec, err := reconciler(b.cfg, append(ropts, b.o.reconcileOpts...))
	if err != nil {
		return nil, err
	}
	b.rec = rec
	return rec, nil
}

// Source returns the git source of source: (see Source), stamping times on
// the state cluster's clock and minting source.auth.githubApp tokens at
// github.apiURL over HTTPTransport; WithSourceOptions are added last.
func (b *Builder) Source() (*gitsource.Source, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.source != nil {
		return b.source, nil
	}
	// The clock first, so that WithSourceOptions may set another.
	src, err := b.newSourceLocked(b.cfg.Source, []gitsource.Option{gitsource.WithClock(b.stateClock.Now)})
	if err != nil {
		return nil, fmt.Errorf("configuring git source: %w", err)
	}
	b.source = src
	return src, nil
}

// BranchSource returns a new, read-only git source of branch of the
// manifests repository with its cache in dir (PR previews: one per branch,
// not kept by the builder): the source's URL, credentials and transport,
// without a schedule or signature verification, polled at least every
// minute if polled at all.
func (b *Builder) BranchSource(branch, dir string) (*gitsource.Source, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	src := b.cfg.Source
	src.Branch, src.Schedule, src.Verify = branch, "", nil // read-only: nothing of a preview is applied
	if src.Interval.Duration <= 0 {
		src.Interval.Duration = time.Minute
	}
	s, err := b.newSourceLocked(src, nil, gitsource.WithCacheDir(dir)) // always the branch's own cache
	if err != nil {
		return nil, fmt.Errorf("configuring source for branch %s: %w", branch, err)
	}
	return s, nil
}

// newSourceLocked builds a source of src with the builder's settings:
// first before WithSourceOptions, last after them.
func (b *Builder) newSourceLocked(src config.Source, first []gitsource.Option, last ...gitsource.Option) (*gitsource.Source, error) {
	rt, err := b.transportLocked()
	if err != nil {
		return nil, err
	}
	o := b.o
	o.httpTransport = rt
	o.githubAPIURL = b.cfg.GitHub.APIURL
	o.sourceOpts = append(append(append([]gitsource.Option{}, first...), b.o.sourceOpts...), last...)
	return source(src, o)
}

// Webhook returns the receiver of GitHub webhooks (WithWebhook's, else one
// with the secret of github.webhookSecretFile and github.webhookMaxBodyBytes),
// or nil when github.webhookSecretFile is not set.
func (b *Builder) Webhook() (*webhook.Receiver, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.webhookDone {
		return b.webhook, nil
	}
	r := b.o.webhook
	if r == nil && b.cfg.GitHub.WebhookSecretFile != "" {
		secret, err := config.ReadSecret(b.cfg.GitHub.WebhookSecretFile)
		if err != nil {
			return nil, fmt.Errorf("github.webhookSecretFile: %w", err)
		}
		var opts []webhook.Option
		if n := b.cfg.GitHub.WebhookMaxBodyBytes; n != 0 {
			opts = append(opts, webhook.WithMaxBodyBytes(n))
		}
		if r, err = webhook.New(secret, opts...); err != nil {
			return nil, err
		}
	}
	tp, err := b.tracingLocked()
	if err != nil {
		return nil, err
	}
	tracePushes(r, tp)
	b.webhook, b.webhookDone = r, true
	return r, nil
}

// Pushes returns where the daemon hears of pushes to source.url's
// source.branch: the webhook receiver's "push" events (a *Pushes); nil
// without a receiver (the source is polled only). Its type is the
// interface daemon.Pushes names, written out (the builder imports no
// daemon), so that a Builder is a daemon.Parts.
func (b *Builder) Pushes() (interface{ OnPush(trigger func()) error }, error) {
	r, err := b.Webhook()
	if err != nil || r == nil {
		return nil, err
	}
	return &Pushes{receiver: r, url: b.cfg.Source.URL, branch: b.cfg.Source.Branch}, nil
}

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

// Close stops the watches of the built clients (kubeconfig and cluster
// Secrets of targets).
func (b *Builder) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clients != nil {
		b.clients.Close()
	}
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
