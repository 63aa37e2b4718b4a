package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	shclock "github.com/stagehand-gitops/stagehand/internal/clock"
)

// Issuer is a CI system whose OIDC ID tokens the bump API accepts.
type Issuer struct {
	// URL is the issuer (the token's iss claim), e.g.
	// https://token.actions.githubusercontent.com or https://gitlab.com.
	URL string `json:"url"`
	// Audience is the aud the tokens must carry (the CI job asks for it).
	Audience string `json:"audience"`
	// Claims names the claim set the issuer sends: github or gitlab.
	Claims string `json:"claims"`
	// Namespaces are the owners (GitHub) or groups (GitLab) whose
	// repositories are trusted from this issuer; a repository elsewhere is
	// refused. Default for github: the upstream owner of the bot.
	Namespaces []string `json:"namespaces,omitempty"`
}

// Claim sets of the supported CI systems.
const (
	ClaimsGitHub = "github"
	ClaimsGitLab = "gitlab"
)

// Caller is who a verified token says sent a request.
type Caller struct {
	Issuer string `json:"issuer"`
	// Repository is the repository the CI run belongs to: OWNER/NAME
	// (GitHub repository) or group/project (GitLab project_path).
	Repository string `json:"repository"`
	// Ref is the git ref the run built (refs/heads/main).
	Ref string `json:"ref"`
	// WorkflowRef is GitHub's workflow_ref or GitLab's ci_config_ref_uri.
	WorkflowRef string `json:"workflowRef"`
	// Event started the run: GitHub event_name, GitLab pipeline_source.
	Event   string `json:"event"`
	Actor   string `json:"actor"`
	Run     string `json:"run"`
	Subject string `json:"subject"`
	// TokenID is the token's jti; Expiry its exp.
	TokenID string    `json:"-"`
	Expiry  time.Time `json:"-"`
}

// Errors of token verification; every one is answered 401, except
// ErrIssuerUnavailable (503).
var (
	ErrNoToken           = errors.New("no bearer token")
	ErrMalformedToken    = errors.New("malformed token")
	ErrUnknownIssuer     = errors.New("issuer not trusted")
	ErrUnknownKey        = errors.New("signed by a key the issuer does not publish")
	ErrBadSignature      = errors.New("signature does not verify")
	ErrWrongAudience     = errors.New("wrong audience")
	ErrExpired           = errors.New("token expired")
	ErrNotYetValid       = errors.New("token not valid yet")
	ErrNoTokenID         = errors.New("token has no jti")
	ErrReplayed          = errors.New("token already used")
	ErrMissingClaim      = errors.New("token lacks a claim")
	ErrIssuerUnavailable = errors.New("issuer unavailable")
	// ErrUntrustedRepository: the token is genuine, but its repository is
	// under none of the issuer's trusted namespaces.
	ErrUntrustedRepository = errors.New("repository not under a trusted namespace")
	// ErrBusy is answered 503: too many unexpired tokens are remembered.
	ErrBusy = errors.New("too many tokens in use; try again later")
)

// MinRefresh is the default least time between two fetches of an issuer's
// discovery document or key set: a token naming an unknown key triggers a
// refetch at most this often, so forged key ids cannot make the bot hammer
// the issuer.
const MinRefresh = 30 * time.Second

// maxKeySet caps a discovery document or key set response.
const maxKeySet = 1 << 20

// nbfLeeway is how far ahead of the issuer's clock (as its answers' Date
// says) a token's nbf or iat may be: the hosts that sign its tokens may run
// a little ahead of the one that serves its keys; go-oidc's value. GitHub
// backdates nbf. exp has no allowance: it is judged on the issuer's own clock.
const nbfLeeway = 5 * time.Minute

// keyMaxAge is how long a key set (and the issuer's clock read from its
// answer) is used before a token makes it be read again: a key the issuer
// withdrew stops verifying, and a step of this host's clock since is learnt.
const keyMaxAge = time.Hour

// Verifier checks CI ID tokens against the trusted issuers.
type Verifier struct {
	issuers map[string]*trustedIssuer
}

// trustedIssuer is one issuer with its keys, its clock and the ids of the
// tokens used. A token's times (exp, nbf, iat) are judged on the issuer's
// clock, followed from the Date of its discovery and key set answers (TLS,
// like the keys), not on this host's, which may be minutes off: GitHub
// Actions tokens live five minutes. Its tokens' ids are remembered, and
// forgotten, on the same clock, so a token is never forgotten while that
// clock still accepts it.
type trustedIssuer struct {
	Issuer
	client  *http.Client
	now     func() time.Time // this host's: when to fetch again
	clock   *shclock.Remote  // the issuer's: is a token valid
	replay  *replayCache
	refresh time.Duration

	mu      sync.Mutex
	v       *gooidc.IDTokenVerifier
	keys    *keySet
	tried   time.Time // last discovery attempt
	lastErr error
}

// New returns a Verifier that trusts issuers, fetching their documents
// with client at most every refresh (MinRefresh unless a caller asks for
// another); local is this host's clock, from which each issuer's is
// followed.
func New(issuers []Issuer, client *http.Client, refresh time.Duration, local func() time.Time) *Verifier {
	v := &Verifier{issuers: map[string]*trustedIssuer{}}
	client = cappedClient(client)
	for _, is := range issuers {
		ic := *client
		rc := shclock.NewRemote(local)
		ic.Transport = rc.Transport(client.Transport)
		v.issuers[is.URL] = &trustedIssuer{Issuer: is, client: &ic, now: local, clock: rc, replay: newReplayCache(rc.Now), refresh: refresh}
	}
	return v
}

// Issuer returns the issuer trusted at url, as New was given it.
func (v *Verifier) Issuer(url string) (Issuer, bool) {
	is, ok := v.issuers[url]
	if !ok {
		return Issuer{}, false
	}
	return is.Issuer, true
}

// Verify checks the token's signature, issuer, audience and expiry, reads
// the caller's identity from its claims and remembers its jti so the same
// token is refused the next time.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Caller, error) {
	iss, err := unverifiedIssuer(raw)
	if err != nil {
		return nil, err
	}
	is, ok := v.issuers[iss]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIssuer, iss)
	}
	idv, err := is.verifier(ctx)
	if err != nil {
		return nil, err
	}
	is.keys.renew(ctx)
	var keyErr error
	tok, err := idv.Verify(context.WithValue(ctx, keyErrKey{}, &keyErr), raw)
	switch {
	case err == nil:
	case keyErr != nil:
		return nil, keyErr
	default:
		return nil, fmt.Errorf("%w: %v", ErrMalformedToken, err)
	}
	if err := validAt(tok, is.clock.Now()); err != nil {
		return nil, err
	}
	if !slices.Contains(tok.Audience, is.Audience) {
		return nil, fmt.Errorf("%w: %q, want %q", ErrWrongAudience, tok.Audience, is.Audience)
	}
	c, err := is.caller(tok)
	if err != nil {
		return nil, err
	}
	// Before the replay memory: a token of any repository that the issuer
	// serves (every repository on github.com) is genuine, and must not take
	// a place there, or an untrusted repository could fill it.
	if !underNamespace(c.Repository, is.Namespaces) {
		return c, fmt.Errorf("%w: repository %s is not under a namespace trusted from %s (%s)", ErrUntrustedRepository, c.Repository, c.Issuer, strings.Join(is.Namespaces, ", "))
	}
	if c.TokenID == "" {
		return c, ErrNoTokenID
	}
	if err := is.replay.use(c.TokenID, c.Expiry); err != nil {
		return c, err
	}
	return c, nil
}

// unverifiedClaims are what a token says before its signature is checked.
type unverifiedClaims struct {
	Iss         string `json:"iss"`
	Sub         string `json:"sub"`
	Repository  string `json:"repository"`
	ProjectPath string `json:"project_path"`
}

func readUnverified(raw string) (*unverifiedClaims, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: want a JWT of three dot-separated parts", ErrMalformedToken)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64url", ErrMalformedToken)
	}
	var c unverifiedClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: payload is not a JSON object", ErrMalformedToken)
	}
	return &c, nil
}

// unverifiedIssuer reads iss from the token's payload to pick the issuer
// whose keys then verify it.
func unverifiedIssuer(raw string) (string, error) {
	c, err := readUnverified(raw)
	if err != nil {
		return "", err
	}
	if c.Iss == "" {
		return "", fmt.Errorf("%w: payload has no iss", ErrMalformedToken)
	}
	return c.Iss, nil
}

// Claimed is who an unverified token claims to be (nil when it says
// nothing readable), for logging refusals.
func Claimed(raw string) *Caller {
	c, err := readUnverified(raw)
	if err != nil {
		return nil
	}
	repo := c.Repository
	if repo == "" {
		repo = c.ProjectPath
	}
	return &Caller{Issuer: c.Iss, Subject: c.Sub, Repository: repo}
}

// verifier discovers the issuer once (retrying at most every refresh after
// a failure) and returns its token verifier.
func (is *trustedIssuer) verifier(ctx context.Context) (*gooidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.v != nil {
		return is.v, nil
	}
	if !is.tried.IsZero() && is.now().Sub(is.tried) < is.refresh {
		return nil, is.lastErr
	}
	is.tried = is.now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	p, err := gooidc.NewProvider(gooidc.ClientContext(ctx, is.client), is.URL)
	if err != nil {
		// go-oidc quotes a failed answer's body: keep the head of it.
		is.lastErr = fmt.Errorf("%w: discovering %s: %s", ErrIssuerUnavailable, is.URL, clip(err.Error(), 300))
		return nil, is.lastErr
	}
	var doc struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKSURL == "" {
		is.lastErr = fmt.Errorf("%w: discovery document of %s has no jwks_uri", ErrIssuerUnavailable, is.URL)
		return nil, is.lastErr
	}
	if !strings.HasPrefix(doc.JWKSURL, "https://") {
		// The keys decide every token: they come over TLS, as the document did.
		is.lastErr = fmt.Errorf("%w: discovery document of %s: jwks_uri %q is not an https:// URL", ErrIssuerUnavailable, is.URL, clip(doc.JWKSURL, 200))
		return nil, is.lastErr
	}
	ks := &keySet{url: doc.JWKSURL, client: is.client, now: is.now, refresh: is.refresh}
	is.keys = ks
	// The audience is checked by verify (any of an array), exp and nbf by
	// validAt (with typed errors); keySet accepts only asymmetric
	// algorithms, whatever the document advertises.
	is.v = gooidc.NewVerifier(is.URL, ks, &gooidc.Config{SkipClientIDCheck: true, SkipExpiryCheck: true, SupportedSigningAlgs: doc.Algs})
	return is.v, nil
}

// validAt checks the token's exp (required), nbf and iat (when present,
// with nbfLeeway) against now, the issuer's time.
func validAt(tok *gooidc.IDToken, now time.Time) error {
	if tok.Expiry.IsZero() {
		return fmt.Errorf("%w: it has no exp", ErrExpired)
	}
	if !now.Before(tok.Expiry) {
		return fmt.Errorf("%w at %s", ErrExpired, tok.Expiry.UTC().Format(time.RFC3339))
	}
	var c struct {
		NBF *float64 `json:"nbf"`
	}
	if err := tok.Claims(&c); err != nil {
		return fmt.Errorf("%w: nbf: %v", ErrMalformedToken, err)
	}
	if c.NBF != nil {
		if nbf := time.Unix(int64(*c.NBF), 0); now.Add(nbfLeeway).Before(nbf) {
			return fmt.Errorf("%w: nbf is %s, %s ahead of the issuer's clock (%s allowed)", ErrNotYetValid, nbf.UTC().Format(time.RFC3339), nbf.Sub(now).Round(time.Second), nbfLeeway)
		}
	}
	if iat := tok.IssuedAt; !iat.IsZero() && now.Add(nbfLeeway).Before(iat) {
		return fmt.Errorf("%w: iat is %s, %s ahead of the issuer's clock (%s allowed)", ErrNotYetValid, iat.UTC().Format(time.RFC3339), iat.Sub(now).Round(time.Second), nbfLeeway)
	}
	return nil
}

// repositoryRE is a repository path: OWNER/NAME, or GitLab's
// group/subgroup/project; "." and ".." segments are refused apart.
var repositoryRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)

// checkRepository refuses a repository claim that is no repository path of
// the claim set (the issuer signed it, but the file it owns is derived from
// it: acme/../payments-api must not own payments-api.json).
func checkRepository(claims, claim, repo string) error {
	segs := strings.Split(repo, "/")
	ok := repositoryRE.MatchString(repo) && !slices.Contains(segs, ".") && !slices.Contains(segs, "..")
	if ok && claims == ClaimsGitHub && len(segs) != 2 {
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: %s %q is not a repository path (OWNER/NAME; GitLab group/subgroup/project)", ErrMalformedToken, claim, repo)
	}
	return nil
}

// caller reads the identity claims of the issuer's claim set.
func (is *trustedIssuer) caller(tok *gooidc.IDToken) (*Caller, error) {
	var cl struct {
		JTI string `json:"jti"`
		// GitHub Actions
		Repository  string `json:"repository"`
		Ref         string `json:"ref"`
		WorkflowRef string `json:"workflow_ref"`
		EventName   string `json:"event_name"`
		Actor       string `json:"actor"`
		RunID       string `json:"run_id"`
		// GitLab CI
		ProjectPath    string `json:"project_path"`
		RefPath        string `json:"ref_path"`
		RefType        string `json:"ref_type"`
		CIConfigRefURI string `json:"ci_config_ref_uri"`
		PipelineSource string `json:"pipeline_source"`
		UserLogin      string `json:"user_login"`
		JobID          string `json:"job_id"`
	}
	if err := tok.Claims(&cl); err != nil {
		return nil, fmt.Errorf("%w: reading claims: %v", ErrMalformedToken, err)
	}
	c := &Caller{Issuer: tok.Issuer, Subject: tok.Subject, TokenID: cl.JTI, Expiry: tok.Expiry}
	switch is.Claims {
	case ClaimsGitLab:
		c.Repository, c.Ref, c.WorkflowRef, c.Event, c.Actor, c.Run = cl.ProjectPath, cl.RefPath, cl.CIConfigRefURI, cl.PipelineSource, cl.UserLogin, cl.JobID
		if c.Ref == "" && cl.Ref != "" {
			// Older GitLab: ref is the bare branch or tag name.
			switch cl.RefType {
			case "tag":
				c.Ref = "refs/tags/" + cl.Ref
			default:
				c.Ref = "refs/heads/" + cl.Ref
			}
		}
		if c.Repository == "" {
			return c, fmt.Errorf("%w: project_path", ErrMissingClaim)
		}
		if err := checkRepository(is.Claims, "project_path", c.Repository); err != nil {
			return c, err
		}
	default:
		c.Repository, c.Ref, c.WorkflowRef, c.Event, c.Actor, c.Run = cl.Repository, cl.Ref, cl.WorkflowRef, cl.EventName, cl.Actor, cl.RunID
		if c.Repository == "" {
			return c, fmt.Errorf("%w: repository", ErrMissingClaim)
		}
		if err := checkRepository(is.Claims, "repository", c.Repository); err != nil {
			return c, err
		}
	}
	return c, nil
}

type keyErrKey struct{}

// keySet is an issuer's JWKS, cached. A token whose kid is not in the
// cache refetches the set (key rotation), at most once every refresh.
type keySet struct {
	url     string
	client  *http.Client
	now     func() time.Time
	refresh time.Duration

	mu   sync.RWMutex
	keys []jose.JSONWebKey

	fetchMu sync.Mutex
	fetched time.Time // last fetch attempt
	gen     int       // successful fetches
}

var _ gooidc.KeySet = (*keySet)(nil)

var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}

// VerifySignature implements gooidc.KeySet. Its error is also stored where
// the context's keyErrKey points (go-oidc flattens it into a string).
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	payload, err := k.verifySignature(ctx, raw)
	if err != nil {
		if p, ok := ctx.Value(keyErrKey{}).(*error); ok {
			*p = err
		}
	}
	return payload, err
}

func (k *keySet) verifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, signingAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: not a JWS with one signature", ErrMalformedToken)
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.RLock()
	keys, gen := k.keys, k.gen
	k.mu.RUnlock()
	if payload, found, err := verifyWith(jws, keys, kid); found {
		return payload, err
	}
	keys, err = k.refetch(ctx, gen)
	if err != nil {
		return nil, err
	}
	if payload, found, err := verifyWith(jws, keys, kid); found {
		return payload, err
	}
	return nil, fmt.Errorf("%w: kid %q at %s", ErrUnknownKey, kid, k.url)
}

// maxKeysTried bounds the signature checks of one token: a token naming
// no key (or a key id the set repeats) is tried against the first few
// candidates only, so that a token anyone can send never costs a check
// against every key of a large set. Real issuers name the key and publish
// a handful.
const maxKeysTried = 8

// verifyWith verifies jws with the key named kid (the first maxKeysTried
// keys when the token names none); found reports whether such a key was
// there to try.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, found bool, err error) {
	tried := 0
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if tried == maxKeysTried {
			break
		}
		tried++
		found = true
		if p, err := jws.Verify(&keys[i]); err == nil {
			return p, true, nil
		}
	}
	if found {
		return nil, true, fmt.Errorf("%w with key %q", ErrBadSignature, kid)
	}
	return nil, false, nil
}

// renew reads the key set again when the last read is older than
// keyMaxAge (or in this host's future: its clock was stepped back). A
// request never waits for another's read: while one is under way the known
// keys serve; they stay when the read fails.
func (k *keySet) renew(ctx context.Context) {
	if !k.fetchMu.TryLock() {
		return
	}
	defer k.fetchMu.Unlock()
	if age := k.now().Sub(k.fetched); k.fetched.IsZero() || (age >= 0 && age < keyMaxAge) {
		return // never read yet (the token's key is fetched then), or recently
	}
	k.mu.RLock()
	gen := k.gen
	k.mu.RUnlock()
	_, _ = k.refetchLocked(ctx, gen) // a failure keeps the known keys
}

// refetch reads the key set again unless another request did since
// generation gen was read, or the last fetch is more recent than refresh.
func (k *keySet) refetch(ctx context.Context, gen int) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	return k.refetchLocked(ctx, gen)
}

// refetchLocked is refetch with fetchMu held.
func (k *keySet) refetchLocked(ctx context.Context, gen int) ([]jose.JSONWebKey, error) {
	k.mu.RLock()
	keys, cur := k.keys, k.gen
	k.mu.RUnlock()
	if cur != gen {
		return keys, nil // fetched meanwhile
	}
	if age := k.now().Sub(k.fetched); !k.fetched.IsZero() && age >= 0 && age < k.refresh {
		return keys, nil // rate-limited: the cache is all there is
	}
	k.fetched = k.now()
	fetched, err := k.fetch(ctx)
	if err != nil {
		if len(keys) > 0 {
			return keys, nil // keep the known keys; the unknown one stays unknown
		}
		return nil, err
	}
	k.mu.Lock()
	k.keys, k.gen = fetched, k.gen+1
	k.mu.Unlock()
	return fetched, nil
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	// Not cut short by the request that asked: a client hanging up must not
	// leave the cache stale until the next refresh is allowed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: key set URL %q: %v", ErrIssuerUnavailable, k.url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetching keys: %v", ErrIssuerUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // capped by cappedClient
	if err != nil {
		return nil, fmt.Errorf("%w: reading keys from %s: %v", ErrIssuerUnavailable, k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: fetching keys from %s: %s", ErrIssuerUnavailable, k.url, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%w: decoding keys from %s: %v", ErrIssuerUnavailable, k.url, err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := json.Unmarshal(raw, &key); err != nil || !key.Valid() || !key.IsPublic() {
			continue // a key type or use we cannot verify with
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// maxReplay bounds the remembered token ids of an issuer (tokens live
// minutes; this is far more bumps than any pipeline sends within a token's
// lifetime).
const maxReplay = 100000

// replayCache remembers the ids of an issuer's used tokens until they
// expire by now, the issuer's clock. It lives in the process: prbot serve
// runs as one replica (the chart keeps it at 1).
type replayCache struct {
	now    func() time.Time // the issuer's clock
	local  func() time.Time // this process's (monotonic) clock
	mu     sync.Mutex
	seen   map[string]replayEntry
	pruned time.Time
}

// replayEntry is a used token: until its expiry on the issuer's clock, and
// at least as long on this process's clock (plus replayMargin), so that the
// issuer's clock stepping back cannot bring a forgotten id back to life.
type replayEntry struct{ until, keep time.Time }

// replayMargin is how much longer than its remaining lifetime a used token
// is remembered on this process's clock.
const replayMargin = 10 * time.Minute

func newReplayCache(now func() time.Time) *replayCache {
	return &replayCache{now: now, local: time.Now, seen: map[string]replayEntry{}}
}

// use records id until exp; it fails if id was recorded before.
func (r *replayCache) use(id string, exp time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now, local := r.now(), r.local()
	if _, ok := r.seen[id]; ok {
		return ErrReplayed // kept only while it may still be valid on some reading of the issuer's clock
	}
	if len(r.seen) >= maxReplay || local.Sub(r.pruned) > time.Minute {
		for k, e := range r.seen {
			if !now.Before(e.until) && !local.Before(e.keep) {
				delete(r.seen, k)
			}
		}
		r.pruned = local
	}
	if len(r.seen) >= maxReplay {
		return ErrBusy
	}
	r.seen[id] = replayEntry{until: exp, keep: local.Add(exp.Sub(now) + replayMargin)}
	return nil
}

// cappedClient is c with every answer's body cut off at maxKeySet bytes:
// reading further fails (go-oidc reads a discovery document whole).
func cappedClient(c *http.Client) *http.Client {
	cp := *c
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = capTransport{base: base}
	return &cp
}

type capTransport struct{ base http.RoundTripper }

func (t capTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: maxKeySet, url: r.URL.Redacted()}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
	url  string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("answer of %s larger than %d bytes", b.url, maxKeySet)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// clip cuts s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// underNamespace reports whether repo (a/b or a/b/c) lies under one of the namespaces.
func underNamespace(repo string, namespaces []string) bool {
	for _, ns := range namespaces {
		if ns != "" && len(repo) > len(ns) && strings.EqualFold(repo[:len(ns)], ns) && repo[len(ns)] == '/' {
			return true
		}
	}
	return false
}
