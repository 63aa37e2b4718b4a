package wire

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// deployParts are what a process deploys with, each built once: the
// reconciler (checking kube's lock service, its registry requests counted),
// the git source and a preview's per branch (over github's transport), the
// webhook receiver of pushes, and the tracer provider.
type deployParts struct {
	cfg    *config.Config
	o      *options
	kube   *kubeParts
	github *gitHubParts

	mu          sync.Mutex
	checker     *lock.Checker
	rec         *reconcile.Reconciler
	source      *gitsource.Source
	webhook     *webhook.Receiver
	webhookDone bool
	// registryRequests counts the reconciler's registry requests
	// (registrymetrics.go).
	registryRequests *prometheus.CounterVec
	tracing          *tracing.Provider
}

// Reconciler returns the reconciler of the registry: and workloads:
// sections, checking the lock service's locks under WithAuthor's name (the
// reconciler's own locks taken over with WithTakeOverOwnLocks), followed by
// WithReconcileOptions.
func (d *deployParts) Reconciler() (*reconcile.Reconciler, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rec != nil {
		return d.rec, nil
	}
	svc, err := d.kube.LockService()
	if err != nil {
		return nil, err
	}
	if d.checker == nil {
		var copts []lock.Option
		if d.o.takeOverOwnLocks {
			// Only the leader applies, under one fixed author: a new leader takes over
			// the deploy lock a killed one left instead of waiting for it to expire.
			copts = append(copts, lock.TakeOverOwnLocks(d.o.author, d.o.formerAuthors...))
		}
		if d.checker, err = lock.NewChecker(svc, nil, copts...); err != nil {
			return nil, fmt.Errorf("locks: %w", err)
		}
	}
	// The options given with WithReconcileOptions come after: a test's
	// registry transport replaces the counted one.
	ropts := []reconcile.Option{reconcile.WithLocks(d.checker, d.checker), reconcile.WithRegistryTransport(d.registryTransport())}
	if d.o.author != "" {
		ropts = append(ropts, reconcile.WithAuthor(d.o.author))
	}
	rec, err := reconciler(d.cfg, append(ropts, d.o.reconcileOpts...))
	if err != nil {
		return nil, err
	}
	d.rec = rec
	return rec, nil
}

// Source returns the git source of source: (see Source), stamping times on
// the state cluster's clock and minting source.auth.githubApp tokens at
// github.apiURL over HTTPTransport; WithSourceOptions are added last.
func (d *deployParts) Source() (*gitsource.Source, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.source != nil {
		return d.source, nil
	}
	// The clock first, so that WithSourceOptions may set another.
	src, err := d.newSourceLocked(d.cfg.Source, []gitsource.Option{gitsource.WithClock(d.kube.StateClock().Now)})
	if err != nil {
		return nil, fmt.Errorf("configuring git source: %w", err)
	}
	d.source = src
	return src, nil
}

// BranchSource returns a new, read-only git source of branch of the
// manifests repository with its cache in dir (PR previews: one per branch,
// not kept by the builder): the source's URL, credentials and transport,
// without a schedule or signature verification, polled at least every
// minute if polled at all.
func (d *deployParts) BranchSource(branch, dir string) (*gitsource.Source, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	src := d.cfg.Source
	src.Branch, src.Schedule, src.Verify = branch, "", nil // read-only: nothing of a preview is applied
	if src.Interval.Duration <= 0 {
		src.Interval.Duration = time.Minute
	}
	s, err := d.newSourceLocked(src, nil, gitsource.WithCacheDir(dir)) // always the branch's own cache
	if err != nil {
		return nil, fmt.Errorf("configuring source for branch %s: %w", branch, err)
	}
	return s, nil
}

// newSourceLocked builds a source of src with the builder's settings:
// first before WithSourceOptions, last after them.
func (d *deployParts) newSourceLocked(src config.Source, first []gitsource.Option, last ...gitsource.Option) (*gitsource.Source, error) {
	rt, err := d.github.HTTPTransport()
	if err != nil {
		return nil, err
	}
	o := *d.o
	o.httpTransport = rt
	o.githubAPIURL = d.cfg.GitHub.APIURL
	o.sourceOpts = append(append(append([]gitsource.Option{}, first...), d.o.sourceOpts...), last...)
	return source(src, o)
}

// Webhook returns the receiver of GitHub webhooks (WithWebhook's, else one
// with the secret of github.webhookSecretFile and github.webhookMaxBodyBytes),
// or nil when github.webhookSecretFile is not set.
func (d *deployParts) Webhook() (*webhook.Receiver, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.webhookDone {
		return d.webhook, nil
	}
	r := d.o.webhook
	if r == nil && d.cfg.GitHub.WebhookSecretFile != "" {
		secret, err := config.ReadSecret(d.cfg.GitHub.WebhookSecretFile)
		if err != nil {
			return nil, fmt.Errorf("github.webhookSecretFile: %w", err)
		}
		var opts []webhook.Option
		if n := d.cfg.GitHub.WebhookMaxBodyBytes; n != 0 {
			opts = append(opts, webhook.WithMaxBodyBytes(n))
		}
		if r, err = webhook.New(secret, opts...); err != nil {
			return nil, err
		}
	}
	tp, err := d.tracingLocked()
	if err != nil {
		return nil, err
	}
	tracePushes(r, tp)
	d.webhook, d.webhookDone = r, true
	return r, nil
}

// Pushes returns where the daemon hears of pushes to source.url's
// source.branch: the webhook receiver's "push" events (a *Pushes); nil
// without a receiver (the source is polled only). Its type is the
// interface daemon.Pushes names, written out (the builder imports no
// daemon), so that a Builder is a daemon.Parts.
func (d *deployParts) Pushes() (interface{ OnPush(trigger func()) error }, error) {
	r, err := d.Webhook()
	if err != nil || r == nil {
		return nil, err
	}
	return &Pushes{receiver: r, url: d.cfg.Source.URL, branch: d.cfg.Source.Branch}, nil
}
