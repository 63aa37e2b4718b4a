package reconcile

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stagehand-gitops/stagehand/pkg/registry"
	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// Defaults of New.
const (
	DefaultSelectorLabel       = "app.kubernetes.io/name"
	DefaultConcurrency         = 16
	DefaultRegistryConcurrency = 8
	DefaultRolloutTimeout      = 5 * time.Minute
	DefaultPollInterval        = time.Second
	DefaultAuthor              = "stagehand"
	DefaultRegistryTimeout     = 30 * time.Second
	DefaultTargetTimeout       = 15 * time.Second
	// DefaultRegistryRateLimit is how many requests a second one registry
	// host gets at most (as Kargo and Argo CD Image Updater default to).
	DefaultRegistryRateLimit = 20
	// DefaultDigestCacheTTL is how long a resolved digest is reused.
	DefaultDigestCacheTTL = 5 * time.Minute
	// RevisionAnnotation records on each patched workload the git revision it was deployed from.
	RevisionAnnotation = workload.RevisionAnnotation
	// FieldManager is the field manager of every patch.
	FieldManager = workload.FieldManager
	// ReportingController names Stagehand in the Events it writes.
	ReportingController = "stagehand.io/reconciler"
)

type options struct {
	selectorLabel  string
	verifyDigests  bool
	pinDigests     bool
	registry       registry.Config
	resolver       *registry.Resolver // New's, shared with every Apply unless the rate limit or TTL changes
	locks          LockChecker
	holder         LockHolder
	lockTTL        time.Duration
	concurrency    int
	rolloutTimeout time.Duration
	pollInterval   time.Duration
	author         string
	progress       func(Progress)
	targetTimeout  time.Duration
	promotion      Promotion
	approvedBy     string
}

// Option configures New, or one Apply (over what New was given).
type Option func(*options) error

// WithSelectorLabel sets the label whose value names a workload's service.
func WithSelectorLabel(key string) Option {
	return func(o *options) error {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return fmt.Errorf("setting selector label %q: %s", key, errs[0])
		}
		o.selectorLabel = key
		return nil
	}
}

// WithVerifyDigests makes a dockerDigest that the registry does not serve for
// its tag a problem (default false; the reconciler's config defaults it to true).
func WithVerifyDigests(on bool) Option {
	return func(o *options) error { o.verifyDigests = on; return nil }
}

// WithPinDigests resolves a tag without digest at plan time and deploys
// repo:tag@digest (default false; the config defaults it to true).
func WithPinDigests(on bool) Option {
	return func(o *options) error { o.pinDigests = on; return nil }
}

// WithInsecureRegistries lists registry hosts (host[:port]) reached over plain HTTP.
func WithInsecureRegistries(hosts ...string) Option {
	return func(o *options) error {
		insecure := maps.Clone(o.registry.Insecure) // New's map is shared with every Apply
		for _, h := range hosts {
			insecure[h] = true
		}
		o.registry.Insecure = insecure
		return nil
	}
}

// WithKeychain sets the registry credentials (default authn.DefaultKeychain,
// the docker config).
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error { o.registry.Keychain = k; return nil }
}

// WithWorkloadKeychains resolves each workload's images with the keychain
// k returns for its pull context (see registry.ClusterKeychains), instead of the one
// keychain of WithKeychain.
func WithWorkloadKeychains(k registry.Keychains) Option {
	return func(o *options) error { o.registry.Keychains = k; return nil }
}

// WithRegistryRateLimit bounds the requests sent to each registry host to
// perSecond (default 20), token exchanges included; 0 means no limit.
func WithRegistryRateLimit(perSecond float64) Option {
	return func(o *options) error {
		if perSecond < 0 {
			return fmt.Errorf("setting registry rate limit: %v requests a second is negative", perSecond)
		}
		o.registry.RateLimit = perSecond
		return nil
	}
}

// WithDigestCacheTTL reuses a tag's resolved digest for d (default 5m),
// per repository:tag and credentials; 0 turns the cache off. A tag moved in
// the registry is seen once its entry expires; a dockerDigest that
// disagrees with a cached digest is always checked with the registry. The
// pull credentials read for a workload (WithWorkloadKeychains) are reused
// as long, unless a registry refuses them (401, 403): then the next plan
// reads them again.
func WithDigestCacheTTL(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("setting digest cache TTL: %s is negative", d)
		}
		o.registry.CacheTTL = d
		return nil
	}
}

// WithRegistryTransport sets the HTTP transport for registry requests.
func WithRegistryTransport(t http.RoundTripper) Option {
	return func(o *options) error { o.registry.Transport = t; return nil }
}

// WithRegistryTimeout bounds each image's resolution (default 30s); a
// registry that does not answer in time is a problem for that service.
func WithRegistryTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("setting registry timeout: %s is not positive", d)
		}
		o.registry.Timeout = d
		return nil
	}
}

// WithLocks plugs in deploy locks: checker blocks changes, holder is held on
// each target while applying. Either may be nil.
func WithLocks(checker LockChecker, holder LockHolder) Option {
	return func(o *options) error { o.locks, o.holder = checker, holder; return nil }
}

// WithLockTTL sets how long the apply lock is taken for (default: rollout
// timeout plus five minutes).
func WithLockTTL(d time.Duration) Option {
	return func(o *options) error { o.lockTTL = d; return nil }
}

// WithConcurrency bounds concurrent patches, concurrent Event writes (which
// follow the patches) and concurrent registry requests.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting concurrency: %d is not positive", n)
		}
		o.concurrency = n
		o.registry.Concurrency = n
		return nil
	}
}

// WithRolloutTimeout bounds how long Apply waits for all rollouts; zero
// means Apply does not wait (the rollouts are reported as not waited for).
func WithRolloutTimeout(d time.Duration) Option {
	return func(o *options) error { o.rolloutTimeout = d; return nil }
}

// WithPollInterval sets how often rollout status is read while waiting.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) error { o.pollInterval = d; return nil }
}

// WithTargetTimeout bounds how long Plan waits for one target's workloads
// (default 15s): its Lists, or its watches' first fill. A target that does
// not answer in time is unreachable: a problem for each of its services,
// while the other targets are planned.
func WithTargetTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("setting target timeout: %s is not positive", d)
		}
		o.targetTimeout = d
		return nil
	}
}

// WithProgress calls fn for each workload step of an Apply; calls may come
// from several goroutines, one at a time.
func WithProgress(fn func(Progress)) Option {
	return func(o *options) error { o.progress = fn; return nil }
}

// WithAuthor names who applies, for locks and Events.
func WithAuthor(a string) Option {
	return func(o *options) error { o.author = a; return nil }
}

// Promotion is what an Apply does with an Argo Rollouts Rollout paused at a
// step for a manual promotion.
type Promotion string

const (
	// PromotionWait waits for someone to promote it (`kubectl argo rollouts
	// promote`), within the rollout timeout; the default.
	PromotionWait Promotion = "wait"
	// PromotionAuto promotes it as `kubectl argo rollouts promote` does, with
	// an Event naming who approved the plan.
	PromotionAuto Promotion = "auto"
)

// WithPromotion says what an Apply does with a Rollout paused at a step for
// a promotion, and who approved the plan (named in the Promoted Event).
func WithPromotion(p Promotion, approvedBy string) Option {
	return func(o *options) error {
		switch p {
		case "", PromotionWait, PromotionAuto:
		default:
			return fmt.Errorf("setting promotion %q: want %q or %q", p, PromotionWait, PromotionAuto)
		}
		o.promotion, o.approvedBy = p, approvedBy
		return nil
	}
}

// Reconciler plans and applies environments. It is made of small parts,
// each with one responsibility, built once per set of options (assemble):
// the planner reads the targets and the registry, the lock gate asks the
// LockChecker, the applier holds, patches and records Events, and the
// rollout watcher waits for what was patched.
type Reconciler struct {
	o        options
	cache    *watchCache // shared by the Reconcilers of one New
	planner  *planner
	applier  *applier
	rollouts *rolloutWatcher
}

// assemble returns a Reconciler of o whose parts share o and cache.
func assemble(o options, cache *watchCache) *Reconciler {
	r := &Reconciler{o: o, cache: cache}
	locks := &lockGate{o: &r.o}
	r.planner = &planner{o: &r.o, cache: cache, locks: locks}
	r.rollouts = &rolloutWatcher{o: &r.o, cache: cache}
	r.applier = &applier{o: &r.o, planner: r.planner, rollouts: r.rollouts}
	return r
}

// New returns a Reconciler.
func New(opts ...Option) (*Reconciler, error) {
	o := options{
		selectorLabel:  DefaultSelectorLabel,
		concurrency:    DefaultConcurrency,
		rolloutTimeout: DefaultRolloutTimeout,
		targetTimeout:  DefaultTargetTimeout,
		pollInterval:   DefaultPollInterval,
		author:         DefaultAuthor,
		registry: registry.Config{
			Keychain:    authn.DefaultKeychain,
			Insecure:    map[string]bool{},
			Concurrency: DefaultRegistryConcurrency,
			Timeout:     DefaultRegistryTimeout,
			RateLimit:   DefaultRegistryRateLimit,
			CacheTTL:    DefaultDigestCacheTTL,
		},
	}
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	o.resolver = registry.New(o.registry)
	return assemble(o, &watchCache{}), nil
}

// apply applies opts to o, then checks the combination.
func (o *options) apply(opts []Option) error {
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return err
		}
	}
	if o.rolloutTimeout < 0 || o.pollInterval <= 0 {
		return errors.New("configuring reconciler: rollout timeout must not be negative and poll interval must be positive")
	}
	if o.lockTTL < 0 {
		return fmt.Errorf("configuring reconciler: lock TTL %s is negative", o.lockTTL)
	}
	return nil
}

// ttl is how long the apply lock is taken for.
func (o *options) ttl() time.Duration {
	if o.lockTTL == 0 {
		return o.rolloutTimeout + 5*time.Minute
	}
	return o.lockTTL
}

// with returns a Reconciler with r's options and then opts.
func (r *Reconciler) with(opts []Option) (*Reconciler, error) {
	if len(opts) == 0 {
		return r, nil
	}
	o := r.o
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	o.resolver = r.o.resolver.With(o.registry)
	return assemble(o, r.cache), nil
}
