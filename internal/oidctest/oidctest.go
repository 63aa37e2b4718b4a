package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a CI OIDC issuer on loopback TLS: discovery document, JWKS
// and RSA signing keys it can rotate.
type Issuer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	published []*Key
	jwksHits  atomic.Int32
	discovery atomic.Int32
	n         atomic.Int64 // token ids
	// keySetHook and discoveryHook, when set, answer instead of the
	// issuer (a slow, huge or hostile issuer).
	keySetHook    http.HandlerFunc
	discoveryHook http.HandlerFunc
}

// Key is an RSA signing key with its key id.
type Key struct {
	KID  string
	priv *rsa.PrivateKey
}

// New starts an issuer with one published key; it stops with the test.
func New(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.discovery.Add(1)
		if h := is.hook(&is.discoveryHook); h != nil {
			h(w, r)
			return
		}
		writeJSON(w, is.Discovery(nil))
	})
	mux.HandleFunc("GET /.well-known/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		if h := is.hook(&is.keySetHook); h != nil {
			h(w, r)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		set := jose.JSONWebKeySet{}
		for _, k := range is.published {
			set.Keys = append(set.Keys, k.Public())
		}
		writeJSON(w, set)
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	is.Rotate(t, false)
	return is
}

// URL is the issuer URL (the tokens' iss).
func (is *Issuer) URL() string { return is.srv.URL }

// Certificate is the issuer's TLS certificate, to trust.
func (is *Issuer) Certificate() *x509.Certificate { return is.srv.Certificate() }

// CertPEM is Certificate in PEM, for a CA file.
func (is *Issuer) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw})
}

// ServeKeySet answers the key set requests with h instead of the published
// keys (nil: the published keys again), e.g. a slow or huge key set.
func (is *Issuer) ServeKeySet(h http.HandlerFunc) { is.setHook(&is.keySetHook, h) }

// ServeDiscovery answers the discovery document requests with h (nil: the
// issuer's own document again).
func (is *Issuer) ServeDiscovery(h http.HandlerFunc) { is.setHook(&is.discoveryHook, h) }

// Discovery is the issuer's own discovery document (the fields GitHub's
// https://token.actions.githubusercontent.com/.well-known/openid-configuration
// has) with the fields in change replaced, for a ServeDiscovery handler.
func (is *Issuer) Discovery(change map[string]any) map[string]any {
	doc := map[string]any{
		"issuer":                                is.srv.URL,
		"jwks_uri":                              is.srv.URL + "/.well-known/jwks",
		"subject_types_supported":               []string{"public", "pairwise"},
		"response_types_supported":              []string{"id_token"},
		"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_owner", "run_id", "actor", "workflow", "workflow_ref", "event_name", "ref_type"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid"},
	}
	for k, v := range change {
		doc[k] = v
	}
	return doc
}

// WriteJSON writes v as a JSON answer, for ServeKeySet and ServeDiscovery handlers.
func WriteJSON(w http.ResponseWriter, v any) { writeJSON(w, v) }

func (is *Issuer) setHook(at *http.HandlerFunc, h http.HandlerFunc) {
	is.mu.Lock()
	defer is.mu.Unlock()
	*at = h
}

func (is *Issuer) hook(at *http.HandlerFunc) http.HandlerFunc {
	is.mu.Lock()
	defer is.mu.Unlock()
	return *at
}

// Close stops the issuer (it is unreachable from then on).
func (is *Issuer) Close() { is.srv.Close() }

// KeySetFetches and DiscoveryFetches count the requests for the JWKS and
// the discovery document.
func (is *Issuer) KeySetFetches() int { return int(is.jwksHits.Load()) }

// DiscoveryFetches counts the requests for the discovery document.
func (is *Issuer) DiscoveryFetches() int { return int(is.discovery.Load()) }

// NewKey makes a signing key that no issuer publishes.
func NewKey(t testing.TB, kid string) *Key {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{KID: kid, priv: priv}
}

// Rotate publishes a new key and signs with it from now on; keepOld keeps
// the previous keys published.
func (is *Issuer) Rotate(t testing.TB, keepOld bool) *Key {
	t.Helper()
	is.mu.Lock()
	n := len(is.published)
	is.mu.Unlock()
	k := NewKey(t, fmt.Sprintf("key-%d-%d", n, time.Now().UnixNano()))
	is.mu.Lock()
	defer is.mu.Unlock()
	if !keepOld {
		is.published = nil
	}
	is.published = append(is.published, k)
	return k
}

// Public is the key's public half, as its JWKS entry.
func (k *Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.KID, Algorithm: "RS256", Use: "sig"}
}

// Current is the key the issuer signs with.
func (is *Issuer) Current() *Key {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.published[len(is.published)-1]
}

// Sign signs claims with key (the current key when nil) as a compact JWT.
func (is *Issuer) Sign(t testing.TB, key *Key, claims map[string]any) string {
	t.Helper()
	if key == nil {
		key = is.Current()
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key.priv, KeyID: key.KID}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// GitHubClaims is the claim set GitHub Actions sends for a push to main of
// repo (docs.github.com "OpenID Connect reference", example token), with
// audience aud, issued at iat.
func (is *Issuer) GitHubClaims(repo, aud string, iat time.Time) map[string]any {
	owner, _, _ := strings.Cut(repo, "/")
	sha := "6a3e6ad64ba3a81d0a9eaab4bd4c9fac6e7b9bb5"
	return map[string]any{
		"jti":                   fmt.Sprintf("gh-%d", is.n.Add(1)),
		"sub":                   "repo:" + repo + ":ref:refs/heads/main",
		"aud":                   aud,
		"ref":                   "refs/heads/main",
		"sha":                   sha,
		"repository":            repo,
		"repository_owner":      owner,
		"actor_id":              "12",
		"repository_visibility": "private",
		"repository_id":         "74",
		"repository_owner_id":   "65",
		"run_id":                "6024592231",
		"run_number":            "10",
		"run_attempt":           "1",
		"runner_environment":    "github-hosted",
		"actor":                 "octocat",
		"workflow":              "release",
		"head_ref":              "",
		"base_ref":              "",
		"event_name":            "push",
		"ref_type":              "branch",
		"ref_protected":         "true",
		"workflow_ref":          repo + "/.github/workflows/release.yml@refs/heads/main",
		"workflow_sha":          sha,
		"job_workflow_ref":      repo + "/.github/workflows/release.yml@refs/heads/main",
		"job_workflow_sha":      sha,
		"iss":                   is.URL(),
		"nbf":                   iat.Add(-10 * time.Minute).Unix(),
		"exp":                   iat.Add(5 * time.Minute).Unix(),
		"iat":                   iat.Unix(),
	}
}

// ForkPullRequestClaims is what a pull_request_target run (a fork's pull
// request, run in the upstream repository's context with its ref: the
// base branch) sends: the repository is the upstream one.
func (is *Issuer) ForkPullRequestClaims(repo, aud string, iat time.Time) map[string]any {
	c := is.GitHubClaims(repo, aud, iat)
	c["sub"] = "repo:" + repo + ":pull_request"
	c["event_name"] = "pull_request_target"
	c["head_ref"] = "contributor-patch-1"
	c["base_ref"] = "main"
	c["actor"] = "mallory"
	return c
}

// GitLabClaims is the claim set of a GitLab CI id_tokens token for a push
// pipeline on main of project (docs.gitlab.com "OpenID Connect (OIDC)
// Authentication Using ID Tokens", token payload).
func (is *Issuer) GitLabClaims(project, aud string, iat time.Time) map[string]any {
	ns := project[:strings.LastIndex(project, "/")]
	sha := "714a629c0b401fdce83e847fc9589983fc6f46bc"
	return map[string]any{
		"namespace_id":          "72",
		"namespace_path":        ns,
		"project_id":            "20",
		"project_path":          project,
		"user_id":               "1",
		"user_login":            "sample-user",
		"user_email":            "sample-user@example.com",
		"user_access_level":     "developer",
		"pipeline_id":           "574",
		"pipeline_source":       "push",
		"job_id":                "302",
		"ref":                   "main",
		"ref_type":              "branch",
		"ref_path":              "refs/heads/main",
		"ref_protected":         "true",
		"runner_id":             1,
		"runner_environment":    "gitlab-hosted",
		"sha":                   sha,
		"project_visibility":    "private",
		"ci_config_ref_uri":     "gitlab.example.com/" + project + "//.gitlab-ci.yml@refs/heads/main",
		"ci_config_sha":         sha,
		"jti":                   fmt.Sprintf("gl-%d", is.n.Add(1)),
		"iss":                   is.URL(),
		"iat":                   iat.Unix(),
		"nbf":                   iat.Add(-5 * time.Second).Unix(),
		"exp":                   iat.Add(time.Hour).Unix(),
		"sub":                   "project_path:" + project + ":ref_type:branch:ref:main",
		"aud":                   aud,
		"groups_direct":         []string{ns},
		"environment":           "devel",
		"environment_protected": "false",
		"deployment_tier":       "development",
		"environment_action":    "start",
	}
}

// Client is an HTTP client that trusts the issuers' test certificates.
func Client(issuers ...*Issuer) *http.Client {
	pool := x509.NewCertPool()
	for _, is := range issuers {
		pool.AddCert(is.srv.Certificate())
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
