package prbot

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
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

// testIssuer is a CI OIDC issuer on loopback TLS: discovery document, JWKS
// and RSA signing keys it can rotate.
type testIssuer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	published []*testKey
	jwksHits  atomic.Int32
	discovery atomic.Int32
	n         atomic.Int64 // token ids
}

type testKey struct {
	kid  string
	priv *rsa.PrivateKey
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	is := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		is.discovery.Add(1)
		// The fields GitHub's https://token.actions.githubusercontent.com/.well-known/openid-configuration has.
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                is.srv.URL,
			"jwks_uri":                              is.srv.URL + "/.well-known/jwks",
			"subject_types_supported":               []string{"public", "pairwise"},
			"response_types_supported":              []string{"id_token"},
			"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_owner", "run_id", "actor", "workflow", "workflow_ref", "event_name", "ref_type"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid"},
		})
	})
	mux.HandleFunc("GET /.well-known/jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.jwksHits.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		set := jose.JSONWebKeySet{}
		for _, k := range is.published {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig"})
		}
		writeJSON(w, http.StatusOK, set)
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	is.rotate(t, false)
	return is
}

func (is *testIssuer) URL() string { return is.srv.URL }

// client trusts the issuer's test certificate.
func (is *testIssuer) client() *http.Client { return is.srv.Client() }

// newKey makes a signing key (unpublished).
func newKey(t testing.TB, kid string) *testKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{kid: kid, priv: priv}
}

// rotate publishes a new key and signs with it from now on; keepOld keeps
// the previous keys published.
func (is *testIssuer) rotate(t testing.TB, keepOld bool) *testKey {
	t.Helper()
	is.mu.Lock()
	n := len(is.published)
	is.mu.Unlock()
	k := newKey(t, fmt.Sprintf("key-%d-%d", n, time.Now().UnixNano()))
	is.mu.Lock()
	defer is.mu.Unlock()
	if !keepOld {
		is.published = nil
	}
	is.published = append(is.published, k)
	return k
}

func (is *testIssuer) current() *testKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.published[len(is.published)-1]
}

// sign signs claims with key (the current key when nil).
func (is *testIssuer) sign(t testing.TB, key *testKey, claims map[string]any) string {
	t.Helper()
	if key == nil {
		key = is.current()
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key.priv, KeyID: key.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
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

// githubClaims is the claim set GitHub Actions sends for a push to main of
// repo (docs.github.com "OpenID Connect reference", example token), with
// audience aud, issued at iat.
func (is *testIssuer) githubClaims(repo, aud string, iat time.Time) map[string]any {
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

// forkPullRequestClaims is what a pull_request_target run (a fork's pull
// request, run in the upstream repository's context with its ref: the
// base branch) sends: the repository is the upstream one.
func (is *testIssuer) forkPullRequestClaims(repo, aud string, iat time.Time) map[string]any {
	c := is.githubClaims(repo, aud, iat)
	c["sub"] = "repo:" + repo + ":pull_request"
	c["event_name"] = "pull_request_target"
	c["head_ref"] = "contributor-patch-1"
	c["base_ref"] = "main"
	c["actor"] = "mallory"
	return c
}

// gitlabClaims is the claim set of a GitLab CI id_tokens token for a push
// pipeline on main of project (docs.gitlab.com "OpenID Connect (OIDC)
// Authentication Using ID Tokens", token payload).
func (is *testIssuer) gitlabClaims(project, aud string, iat time.Time) map[string]any {
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

// trusting is an HTTP client that trusts the issuers' test certificates.
func trusting(issuers ...*testIssuer) *http.Client {
	pool := x509.NewCertPool()
	for _, is := range issuers {
		pool.AddCert(is.srv.Certificate())
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// clock is the real time plus an offset tests move forward.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

func TestVerify(t *testing.T) {
	is := newTestIssuer(t)
	gl := newTestIssuer(t)
	clk := &clock{}
	v := newVerifier([]Issuer{
		{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub},
		{URL: gl.URL(), Audience: "stagehand", Claims: ClaimsGitLab, Namespaces: []string{"acme-group"}},
	}, trusting(is, gl), 30*time.Second, clk.now)
	ctx := context.Background()

	c, err := v.verify(ctx, is.sign(t, nil, is.githubClaims("acme/checkout-api", "stagehand", clk.now())))
	if err != nil {
		t.Fatal(err)
	}
	want := Caller{Issuer: is.URL(), Repository: "acme/checkout-api", Ref: "refs/heads/main", WorkflowRef: "acme/checkout-api/.github/workflows/release.yml@refs/heads/main",
		Event: "push", Actor: "octocat", Run: "6024592231", Subject: "repo:acme/checkout-api:ref:refs/heads/main"}
	c.TokenID, c.Expiry = "", time.Time{}
	if *c != want {
		t.Errorf("GitHub caller = %+v\nwant %+v", *c, want)
	}
	c, err = v.verify(ctx, gl.sign(t, nil, gl.gitlabClaims("acme-group/platform/checkout-api", "stagehand", clk.now())))
	if err != nil {
		t.Fatal(err)
	}
	want = Caller{Issuer: gl.URL(), Repository: "acme-group/platform/checkout-api", Ref: "refs/heads/main", WorkflowRef: "gitlab.example.com/acme-group/platform/checkout-api//.gitlab-ci.yml@refs/heads/main",
		Event: "push", Actor: "sample-user", Run: "302", Subject: "project_path:acme-group/platform/checkout-api:ref_type:branch:ref:main"}
	c.TokenID, c.Expiry = "", time.Time{}
	if *c != want {
		t.Errorf("GitLab caller = %+v\nwant %+v", *c, want)
	}

	stranger := newTestIssuer(t)
	unpublished := newKey(t, "never-published")
	noJTI := is.githubClaims("acme/checkout-api", "stagehand", clk.now())
	delete(noJTI, "jti")
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"wrong audience", is.sign(t, nil, is.githubClaims("acme/checkout-api", "sts.amazonaws.com", clk.now())), ErrWrongAudience},
		{"expired", is.sign(t, nil, is.githubClaims("acme/checkout-api", "stagehand", clk.now().Add(-time.Hour))), ErrExpired},
		{"unknown issuer", stranger.sign(t, nil, stranger.githubClaims("acme/checkout-api", "stagehand", clk.now())), ErrUnknownIssuer},
		{"unknown key", is.sign(t, unpublished, is.githubClaims("acme/checkout-api", "stagehand", clk.now())), ErrUnknownKey},
		{"forged signature under a published kid", is.sign(t, &testKey{kid: is.current().kid, priv: unpublished.priv}, is.githubClaims("acme/checkout-api", "stagehand", clk.now())), ErrBadSignature},
		{"no jti", is.sign(t, nil, noJTI), ErrNoTokenID},
		{"not a JWT", "abc.def", ErrMalformedToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := v.verify(ctx, tt.token); !errors.Is(err, tt.want) {
				t.Errorf("verify = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("replay", func(t *testing.T) {
		tok := is.sign(t, nil, is.githubClaims("acme/checkout-api", "stagehand", clk.now()))
		if _, err := v.verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := v.verify(ctx, tok); !errors.Is(err, ErrReplayed) {
			t.Errorf("second use = %v, want ErrReplayed", err)
		}
	})

	t.Run("unknown keys refetch the key set at most once per refresh; rotation is picked up", func(t *testing.T) {
		clk.add(time.Minute) // past the refetch the unknown key above caused
		hits := is.jwksHits.Load()
		for i := 0; i < 5; i++ {
			if _, err := v.verify(ctx, is.sign(t, unpublished, is.githubClaims("acme/checkout-api", "stagehand", clk.now()))); !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("verify = %v, want ErrUnknownKey", err)
			}
		}
		if got := is.jwksHits.Load() - hits; got != 1 {
			t.Errorf("5 tokens with an unknown key fetched the key set %d times, want 1", got)
		}
		// The issuer rotates its key; once the refresh interval has passed
		// the new key's first token fetches it.
		k := is.rotate(t, false)
		clk.add(31 * time.Second)
		if _, err := v.verify(ctx, is.sign(t, k, is.githubClaims("acme/checkout-api", "stagehand", clk.now()))); err != nil {
			t.Fatalf("token of the rotated key: %v", err)
		}
		if got := is.discovery.Load(); got != 1 {
			t.Errorf("discovery fetched %d times, want once", got)
		}
	})

	t.Run("issuer unreachable at the first token: unavailable, not unauthorized", func(t *testing.T) {
		down := newTestIssuer(t)
		tok := down.sign(t, nil, down.githubClaims("acme/checkout-api", "stagehand", clk.now()))
		url := down.URL()
		down.srv.Close()
		v := newVerifier([]Issuer{{URL: url, Audience: "stagehand", Claims: ClaimsGitHub}}, trusting(down), 30*time.Second, clk.now)
		if _, err := v.verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) {
			t.Errorf("verify = %v, want ErrIssuerUnavailable", err)
		}
	})
}

// BenchmarkVerify measures one bump API token verification with a warm
// key set cache: signature (RS256, 2048-bit), claims, audience, replay.
func BenchmarkVerify(b *testing.B) {
	is := newTestIssuer(b)
	v := newVerifier([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub}}, is.client(), 30*time.Second, time.Now)
	ctx := context.Background()
	// Signing is slow: sign a pool of distinct tokens and forget the used
	// ids each round (a real request carries a fresh token).
	tokens := make([]string, 256)
	for i := range tokens {
		tokens[i] = is.sign(b, nil, is.githubClaims("acme/checkout-api", "stagehand", time.Now()))
	}
	if _, err := v.verify(ctx, tokens[0]); err != nil { // warm the caches
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(tokens) == 0 {
			v.replay = newReplayCache(time.Now)
		}
		if _, err := v.verify(ctx, tokens[i%len(tokens)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := is.jwksHits.Load(); n != 1 {
		b.Errorf("key set fetched %d times, want once", n)
	}
}
