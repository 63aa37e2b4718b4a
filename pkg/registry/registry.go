package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ErrTagNotFound is returned (wrapped) when the registry does not serve a tag.
var ErrTagNotFound = errors.New("tag not found")

// Key is one repository:tag to resolve with one pull context's credentials.
type Key struct {
	Repository, Tag string
	Pull            Pull
}

func (k Key) String() string { return k.Repository + ":" + k.Tag }

// Resolution is the registry's answer for one Key.
type Resolution struct {
	Digest string
	Err    error
	Cached bool // Digest came from the digest cache
}

// Config is how a Resolver reaches registries.
type Config struct {
	Keychain    authn.Keychain // every workload's, unless Keychains is set
	Keychains   Keychains      // per workload
	Insecure    map[string]bool
	Transport   http.RoundTripper // nil: go-containerregistry's default
	Concurrency int               // resolutions at once
	Timeout     time.Duration     // per image; 0: none
	RateLimit   float64           // requests a second per registry host; 0: none
	CacheTTL    time.Duration     // 0: no digest cache
	// Now is where the digest cache reads the time (nil: time.Now).
	Now func() time.Time
}

// Resolver resolves tags to digests through go-containerregistry. What
// every plan of one Resolver shares — a rate limiter per registry host, the
// digest cache, the credentials read — lives as long as it does.
type Resolver struct {
	cfg   Config
	store *store
}

// New returns a Resolver of cfg.
func New(cfg Config) *Resolver {
	s := newStore(cfg.RateLimit, cfg.CacheTTL)
	if cfg.Now != nil {
		s.now = cfg.Now
	}
	return &Resolver{cfg: cfg, store: s}
}

// With returns a Resolver of cfg that shares r's rate limiters, digest
// cache and credentials unless cfg changes the rate limit or the TTL.
func (r *Resolver) With(cfg Config) *Resolver {
	if cfg.RateLimit != r.cfg.RateLimit || cfg.CacheTTL != r.cfg.CacheTTL {
		return New(cfg)
	}
	return &Resolver{cfg: cfg, store: r.store}
}

// ResolveAll resolves every key once, at most Config.Concurrency at a
// time; fresh skips the digest cache.
func (s *Session) ResolveAll(ctx context.Context, keys []Key, fresh bool) map[Key]Resolution {
	out := make(map[Key]Resolution, len(keys))
	var mu sync.Mutex
	sem := make(chan struct{}, max(1, s.r.cfg.Concurrency))
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res := s.resolve(ctx, k, fresh)
			mu.Lock()
			out[k] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// resolve returns the digest the registry serves for k, from the cache
// unless fresh.
func (s *Session) resolve(ctx context.Context, k Key, fresh bool) Resolution {
	r, kcs := s.r, s
	if r.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Timeout)
		defer cancel()
	}
	fail := func(err error) Resolution { return Resolution{Err: err} }
	ref, err := name.NewTag(k.String())
	if err != nil {
		return fail(fmt.Errorf("parsing image %q: %w", k, err))
	}
	if r.cfg.Insecure[ref.RegistryStr()] {
		if ref, err = name.NewTag(k.String(), name.Insecure); err != nil {
			return fail(fmt.Errorf("parsing image %q: %w", k, err))
		}
	}
	kc, err := kcs.get(ctx, k.Pull)
	if err != nil {
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	auth, id, who, err := r.store.credentials(ctx, authKey{keychain: kcs.key(k.Pull), repository: ref.Context().String()}, kc, ref.Context())
	if err != nil {
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	ck := cacheKey{image: ref.String(), credentials: id}
	if !fresh {
		if d, ok := r.store.cached(ck); ok {
			return Resolution{Digest: d, Cached: true}
		}
	}
	base := r.cfg.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(limited{base: base, state: r.store})}
	desc, err := remote.Head(ref, opts...)
	if err != nil && !notFound(err) {
		// Some registries refuse HEAD or omit Docker-Content-Digest; GET
		// always answers, and its error has a body that says why.
		d, gerr := remote.Get(ref, opts...)
		if gerr == nil {
			r.store.remember(ck, d.Digest.String())
			return Resolution{Digest: d.Digest.String()}
		}
		err = gerr
	}
	if err != nil {
		if notFound(err) {
			return fail(fmt.Errorf("resolving %s: %w", k, ErrTagNotFound))
		}
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
			kcs.forget(k.Pull)
			return fail(fmt.Errorf("resolving %s: registry %s answered %d %s to a request made %s: %w",
				k, ref.RegistryStr(), te.StatusCode, http.StatusText(te.StatusCode), who, err))
		}
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	r.store.remember(ck, desc.Digest.String())
	return Resolution{Digest: desc.Digest.String()}
}

func notFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}
