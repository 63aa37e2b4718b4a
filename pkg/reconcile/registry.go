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

// imageKey is one repository:tag to resolve.
type imageKey struct{ Repository, Tag string }

func (k imageKey) String() string { return k.Repository + ":" + k.Tag }

// resolution is the registry's answer for one imageKey.
type resolution struct {
	Digest string
	Err    error
}

// registry resolves tags to digests through go-containerregistry.
type registry struct {
	keychain    authn.Keychain
	insecure    map[string]bool
	transport   http.RoundTripper
	concurrency int
	timeout     time.Duration // per image
}

// resolveAll resolves every key once, at most r.concurrency at a time.
func (r *registry) resolveAll(ctx context.Context, keys []imageKey) map[imageKey]resolution {
	out := make(map[imageKey]resolution, len(keys))
	var mu sync.Mutex
	sem := make(chan struct{}, max(1, r.concurrency))
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d, err := r.resolve(ctx, k)
			mu.Lock()
			out[k] = resolution{Digest: d, Err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// resolve returns the digest the registry serves for k.
func (r *registry) resolve(ctx context.Context, k imageKey) (string, error) {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	ref, err := name.NewTag(k.String())
	if err != nil {
		return "", fmt.Errorf("parsing image %q: %w", k, err)
	}
	if r.insecure[ref.RegistryStr()] {
		if ref, err = name.NewTag(k.String(), name.Insecure); err != nil {
			return "", fmt.Errorf("parsing image %q: %w", k, err)
		}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(r.keychain)}
	if r.transport != nil {
		opts = append(opts, remote.WithTransport(r.transport))
	}
	desc, err := remote.Head(ref, opts...)
	if err != nil && !notFound(err) {
		// Some registries refuse HEAD or omit Docker-Content-Digest; GET
		// always answers, and its error has a body that says why.
		d, gerr := remote.Get(ref, opts...)
		if gerr == nil {
			return d.Digest.String(), nil
		}
		err = gerr
	}
	if err != nil {
		if notFound(err) {
			return "", fmt.Errorf("resolving %s: %w", k, ErrTagNotFound)
		}
		return "", fmt.Errorf("resolving %s: %w", k, err)
	}
	return desc.Digest.String(), nil
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
