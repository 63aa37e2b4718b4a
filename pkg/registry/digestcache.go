package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/time/rate"
)

// store is what every Session of one Resolver (every Plan and Apply of one
// Reconciler) shares: a rate limiter per registry host, the digest cache,
// the keychains and the credentials they answered.
type store struct {
	rateLimit float64
	ttl       time.Duration
	now       func() time.Time

	mu        sync.Mutex
	limiters  map[string]*rate.Limiter
	digests   map[cacheKey]cachedDigest
	keychains map[keychainKey]cachedKeychain
	auths     map[authKey]cachedAuth
	swept     time.Time // when expired entries were last dropped
}

// authKey is a repository as reached with one pull context's keychain (the
// zero keychainKey for the static keychain).
type authKey struct {
	keychain   keychainKey
	repository string
}

// cachedAuth is what a keychain answered for a repository: credentials
// minted by a helper (ECR, ACR, Google) differ on every call, so without it
// every image of every pass would run the helper again, and the digest
// cache, keyed by the credentials' hash, would never be hit.
type cachedAuth struct {
	cfg     authn.AuthConfig
	id, who string
	expires time.Time
}

// keychainKey is a pull context in one cluster (two environments may
// share target names, never clients).
type keychainKey struct {
	client any // the target's kubernetes.Interface
	pull   Pull
}

type cachedKeychain struct {
	kc      authn.Keychain
	expires time.Time
}

// keychain returns the keychain built for k within the TTL, so a pass
// whose digests are cached reads no ServiceAccount or Secret either.
func (s *store) keychain(k keychainKey) (authn.Keychain, bool) {
	if s.ttl <= 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.keychains[k]
	if !ok || !s.now().Before(c.expires) {
		delete(s.keychains, k)
		return nil, false
	}
	return c.kc, true
}

func (s *store) rememberKeychain(k keychainKey, kc authn.Keychain) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keychains[k] = cachedKeychain{kc: kc, expires: s.now().Add(s.ttl)}
}

func (s *store) forgetKeychain(k keychainKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keychains, k)
	for ak := range s.auths {
		if ak.keychain == k {
			delete(s.auths, ak)
		}
	}
}

// credentials returns what kc sends to repo, with an identity of it (a
// hash, for the digest cache's key) and a description for errors, reusing
// kc's answer for k within the TTL.
func (s *store) credentials(ctx context.Context, k authKey, kc authn.Keychain, repo authn.Resource) (authn.Authenticator, string, string, error) {
	if s.ttl > 0 {
		s.mu.Lock()
		c, ok := s.auths[k]
		if ok && !s.now().Before(c.expires) {
			delete(s.auths, k)
			ok = false
		}
		s.mu.Unlock()
		if ok {
			return authn.FromConfig(c.cfg), c.id, c.who, nil
		}
	}
	auth, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		return nil, "", "", fmt.Errorf("finding credentials for registry %s: %w", repo.RegistryStr(), err)
	}
	if auth == authn.Anonymous {
		return auth, "anonymous", "anonymously", nil
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return nil, "", "", fmt.Errorf("reading credentials: %w", err)
	}
	id, who, err := credentialsOf(*cfg)
	if err != nil {
		return nil, "", "", err
	}
	if s.ttl > 0 {
		s.mu.Lock()
		s.auths[k] = cachedAuth{cfg: *cfg, id: id, who: who, expires: s.now().Add(s.ttl)}
		s.mu.Unlock()
	}
	return authn.FromConfig(*cfg), id, who, nil
}

// cacheKey is a repository:tag as seen with one set of credentials, so a
// workload whose credentials do not reach a private repository never reads
// a digest another workload's credentials resolved.
type cacheKey struct{ image, credentials string }

type cachedDigest struct {
	digest  string
	expires time.Time
}

func newStore(rateLimit float64, ttl time.Duration) *store {
	return &store{
		rateLimit: rateLimit, ttl: ttl, now: time.Now,
		limiters: map[string]*rate.Limiter{}, digests: map[cacheKey]cachedDigest{}, keychains: map[keychainKey]cachedKeychain{},
		auths: map[authKey]cachedAuth{},
	}
}

// cached returns the digest cached for k, if it has not expired.
func (s *store) cached(k cacheKey) (string, bool) {
	if s.ttl <= 0 {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.digests[k]
	if !ok {
		return "", false
	}
	if !s.now().Before(c.expires) {
		delete(s.digests, k)
		return "", false
	}
	return c.digest, true
}

// remember caches digest for k for the TTL. Once a TTL it drops the expired
// digests and keychains (pull contexts that went away keep no credentials),
// so the cache holds at most what was resolved within two TTLs, and a pass
// of n images costs n, not n² (the sweep is under the lock every registry
// request's limiter takes).
func (s *store) remember(k cacheKey, digest string) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.swept) >= s.ttl {
		for old, c := range s.digests {
			if !now.Before(c.expires) {
				delete(s.digests, old)
			}
		}
		for old, c := range s.keychains {
			if !now.Before(c.expires) {
				delete(s.keychains, old)
			}
		}
		for old, c := range s.auths {
			if !now.Before(c.expires) {
				delete(s.auths, old)
			}
		}
		s.swept = now
	}
	s.digests[k] = cachedDigest{digest: digest, expires: now.Add(s.ttl)}
}

// limiter returns the token bucket of a registry host: rateLimit requests
// a second, bursts of as many.
func (s *store) limiter(host string) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limiters[host]
	if !ok {
		l = rate.NewLimiter(rate.Limit(s.rateLimit), max(1, int(s.rateLimit)))
		s.limiters[host] = l
	}
	return l
}

// limited is an http.RoundTripper that waits for the request host's token
// before each request (token exchanges included), so no registry sees more
// than the rate limit from this process however many images a plan holds.
type limited struct {
	base  http.RoundTripper
	state *store
}

func (l limited) RoundTrip(req *http.Request) (*http.Response, error) {
	if l.state.rateLimit > 0 {
		if err := l.state.limiter(req.URL.Host).Wait(req.Context()); err != nil {
			return nil, fmt.Errorf("waiting for the rate limit of registry %s: %w", req.URL.Host, err)
		}
	}
	return l.base.RoundTrip(req)
}

// credentialsOf returns an identity of cfg (a hash, never the secret
// itself) and a description for error messages.
func credentialsOf(cfg authn.AuthConfig) (id, who string, err error) {
	if cfg == (authn.AuthConfig{}) {
		return "anonymous", "anonymously", nil
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", "", fmt.Errorf("hashing credentials: %w", err)
	}
	sum := sha256.Sum256(b)
	who = "with a token"
	if cfg.Username != "" {
		who = fmt.Sprintf("as user %q", cfg.Username)
	}
	return hex.EncodeToString(sum[:]), who, nil
}
