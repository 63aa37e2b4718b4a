package registrytest

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running test registry. It is closed at the end of the test
// that created it.
type Registry struct {
	srv      *httptest.Server
	auth     authn.Authenticator // what Push and Digest send
	requests atomic.Int64
	manifest atomic.Int64
	mu       sync.Mutex
	times    []time.Time // when each request arrived
	minted   map[string]bool
}

type options struct {
	user, password string
	minted         bool // password: any token Mint returned
}

// Option configures New.
type Option func(*options) error

// WithBasicAuth makes the registry answer 401 with a Basic challenge to every
// request without these credentials. Push and Digest send them.
func WithBasicAuth(user, password string) Option {
	return func(o *options) error {
		if user == "" || password == "" {
			return fmt.Errorf("WithBasicAuth(%q, password of %d bytes): want a user and a password", user, len(password))
		}
		o.user, o.password = user, password
		return nil
	}
}

// WithMintedTokens makes the registry answer 401 to every request without
// user and a token Mint returned, as a cloud registry accepts every token its
// credential helper mints (ECR, ACR, Artifact Registry), each one different.
func WithMintedTokens(user string) Option {
	return func(o *options) error {
		if user == "" {
			return fmt.Errorf("WithMintedTokens: want a user")
		}
		o.user, o.minted = user, true
		return nil
	}
}

// newOptions applies opts to the defaults (no authentication).
func newOptions(opts ...Option) (options, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// New starts a registry on loopback and closes it at t.Cleanup.
func New(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	o, err := newOptions(opts...)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	r := &Registry{auth: authn.Anonymous, minted: map[string]bool{}}
	if o.user != "" {
		r.auth = &authn.Basic{Username: o.user, Password: o.password}
	}
	if o.minted {
		r.auth = &authn.Basic{Username: o.user, Password: r.Mint()}
	}
	valid := func(u, p string) bool {
		if o.minted {
			r.mu.Lock()
			defer r.mu.Unlock()
			return u == o.user && r.minted[p]
		}
		return u == o.user && p == o.password
	}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		r.mu.Lock()
		r.times = append(r.times, time.Now())
		r.mu.Unlock()
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.manifest.Add(1)
		}
		if u, p, ok := req.BasicAuth(); o.user != "" && (!ok || !valid(u, p)) {
			w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// Host returns the registry's host:port, the prefix of its image references.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Ref returns the full reference host/repo:tag.
func (r *Registry) Ref(repo, tag string) string { return r.Host() + "/" + repo + ":" + tag }

// Push uploads a small random image as repo:tag and returns its digest
// ("sha256:…"). Pushing the same tag again moves the tag to a new image.
func (r *Registry) Push(t testing.TB, repo, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatalf("making random image: %v", err)
	}
	ref, err := name.NewTag(r.Ref(repo, tag), name.Insecure)
	if err != nil {
		t.Fatalf("parsing reference %q: %v", r.Ref(repo, tag), err)
	}
	if err := remote.Write(ref, img, remote.WithContext(t.Context()), remote.WithAuth(r.auth)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatalf("digesting image: %v", err)
	}
	return d.String()
}

// Digest returns the digest the registry serves for repo:tag.
func (r *Registry) Digest(ctx context.Context, repo, tag string) (string, error) {
	ref, err := name.NewTag(r.Ref(repo, tag), name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parsing reference: %w", err)
	}
	d, err := remote.Head(ref, remote.WithContext(ctx), remote.WithAuth(r.auth))
	if err != nil {
		return "", fmt.Errorf("reading digest of %s: %w", ref, err)
	}
	return d.Digest.String(), nil
}

// Mint returns a new token the registry accepts (WithMintedTokens), as a
// credential helper's call does.
func (r *Registry) Mint() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	tok := fmt.Sprintf("minted-%d", len(r.minted)+1)
	r.minted[tok] = true
	return tok
}

// Minted returns how many tokens Mint has returned.
func (r *Registry) Minted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.minted)
}

// Requests returns how many HTTP requests the registry has served.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// ManifestRequests returns how many of those were for manifests (HEAD or GET),
// the requests a digest resolution makes.
func (r *Registry) ManifestRequests() int64 { return r.manifest.Load() }

// RequestTimes returns when each request the registry served arrived, in
// order, to check a client's rate limit.
func (r *Registry) RequestTimes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}
