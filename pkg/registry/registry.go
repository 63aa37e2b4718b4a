package reconcile

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

// imageKey is one repository:tag to resolve with one pull context's
// credentials.
type imageKey struct {
	Repository, Tag string
	pull            pullKey
}

func (k imageKey) String() string { return k.Repository + ":" + k.Tag }

// resolution is the registry's answer for one imageKey.
type resolution struct {
	Digest string
	Err    error
	Cached bool // Digest came from the digest cache
}

// registry resolves tags to digests through go-containerregistry.
type registry struct {
	keychain    authn.Keychain // every workload's, unless keychains is set
	keychains   Keychains      // per workload
	insecure    map[string]bool
	transport   http.RoundTripper
	concurrency int
	timeout     time.Duration // per image
	rateLimit   float64       // requests a second per registry host; 0: none
	cacheTTL    time.Duration // 0: no digest cache
	state       *registryState
}

// resolveAll resolves every key once, at most r.concurrency at a time;
// fresh skips the digest cache.
func (r *registry) resolveAll(ctx context.Context, keys []imageKey, kcs *keychainSet, fresh bool) map[imageKey]resolution {
	out := make(map[imageKey]resolution, len(keys))
	var mu sync.Mutex
	sem := make(chan struct{}, max(1, r.concurrency))
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res := r.resolve(ctx, k, kcs, fresh)
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
func (r *registry) resolve(ctx context.Context, k imageKey, kcs *keychainSet, fresh bool) resolution {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	fail := func(err error) resolution { return resolution{Err: err} }
	ref, err := name.NewTag(k.String())
	if err != nil {
		return fail(fmt.Errorf("parsing image %q: %w", k, err))
	}
	if r.insecure[ref.RegistryStr()] {
		if ref, err = name.NewTag(k.String(), name.Insecure); err != nil {
			return fail(fmt.Errorf("parsing image %q: %w", k, err))
		}
	}
	kc, err := kcs.get(ctx, k.pull)
	if err != nil {
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	auth, id, who, err := r.state.credentials(ctx, authKey{keychain: kcs.key(k.pull), repository: ref.Context().String()}, kc, ref.Context())
	if err != nil {
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	ck := cacheKey{image: ref.String(), credentials: id}
	if !fresh {
		if d, ok := r.state.cached(ck); ok {
			return resolution{Digest: d, Cached: true}
		}
	}
	base := r.transport
	if base == nil {
		base = remote.DefaultTransport
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(limited{base: base, state: r.state})}
	desc, err := remote.Head(ref, opts...)
	if err != nil && !notFound(err) {
		// Some registries refuse HEAD or omit Docker-Content-Digest; GET
		// always answers, and its error has a body that says why.
		d, gerr := remote.Get(ref, opts...)
		if gerr == nil {
			r.state.remember(ck, d.Digest.String())
			return resolution{Digest: d.Digest.String()}
		}
		err = gerr
	}
	if err != nil {
		if notFound(err) {
			return fail(fmt.Errorf("resolving %s: %w", k, ErrTagNotFound))
		}
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
			kcs.forget(k.pull)
			return fail(fmt.Errorf("resolving %s: registry %s answered %d %s to a request made %s: %w",
				k, ref.RegistryStr(), te.StatusCode, http.StatusText(te.StatusCode), who, err))
		}
		return fail(fmt.Errorf("resolving %s: %w", k, err))
	}
	r.state.remember(ck, desc.Digest.String())
	return resolution{Digest: desc.Digest.String()}
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
