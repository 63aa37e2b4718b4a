package oidc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/oidctest"
)

// unsignedJWT is a compact JWT with header and claims as given and the
// signature sig (base64url), for tokens no issuer would sign.
func unsignedJWT(t *testing.T, header, claims map[string]any, sign func(signingInput string) []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(claims)
	return in + "." + base64.RawURLEncoding.EncodeToString(sign(in))
}

func hs256(secret []byte) func(string) []byte {
	return func(in string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(in))
		return m.Sum(nil)
	}
}

// TestVerifyHostileTokens tries what an attacker who can reach the bump API
// sends: tokens it signed itself, claims the issuer never writes, and tokens
// that are genuine but bent (issuer spelling, audiences, times).
func TestVerifyHostileTokens(t *testing.T) {
	is := oidctest.New(t)
	// The issuer also advertises none and HS256 in its discovery document
	// (misconfigured or hostile): the verifier must still refuse both.
	is.ServeDiscovery(func(w http.ResponseWriter, _ *http.Request) {
		oidctest.WriteJSON(w, is.Discovery(map[string]any{"id_token_signing_alg_values_supported": []string{"RS256", "HS256", "none"}}))
	})
	gl := oidctest.New(t)
	clk := &clock{}
	v := New([]Issuer{
		{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}},
		{URL: gl.URL(), Audience: "stagehand", Claims: ClaimsGitLab, Namespaces: []string{"acme-group"}},
	}, oidctest.Client(is, gl), 30*time.Second, clk.now)
	ctx := context.Background()
	claims := func() map[string]any { return is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()) }
	with := func(c map[string]any, kv ...any) map[string]any {
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	// Warm the caches with a genuine token, so that every refusal below is
	// the token's and not a cold issuer's.
	if _, err := v.Verify(ctx, is.Sign(t, nil, claims())); err != nil {
		t.Fatal(err)
	}
	pub := is.Current().Public()
	der, err := x509.MarshalPKIXPublicKey(pub.Key)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	jwk, err := json.Marshal(pub)
	if err != nil {
		t.Fatal(err)
	}
	kid := is.Current().KID
	now := clk.now()

	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"alg none, no signature", unsignedJWT(t, map[string]any{"alg": "none", "typ": "JWT", "kid": kid}, claims(), func(string) []byte { return nil }), ErrMalformedToken},
		{"alg none with a signature", unsignedJWT(t, map[string]any{"alg": "none", "typ": "JWT"}, claims(), func(string) []byte { return []byte("x") }), ErrMalformedToken},
		{"HS256 keyed with the published key's PEM", unsignedJWT(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}, claims(), hs256(pubPEM)), ErrMalformedToken},
		{"HS256 keyed with the published key's DER", unsignedJWT(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}, claims(), hs256(der)), ErrMalformedToken},
		{"HS256 keyed with the published JWK", unsignedJWT(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}, claims(), hs256(jwk)), ErrMalformedToken},
		{"a key embedded in the header (jwk)", unsignedJWT(t, map[string]any{"alg": "RS256", "typ": "JWT", "jwk": json.RawMessage(jwk)}, claims(), func(string) []byte { return make([]byte, 256) }), ErrBadSignature},
		{"iss with a trailing slash", is.Sign(t, nil, with(claims(), "iss", is.URL()+"/")), ErrUnknownIssuer},
		{"iss in upper case", is.Sign(t, nil, with(claims(), "iss", strings.ToUpper(is.URL()))), ErrUnknownIssuer},
		{"iss of the other trusted issuer, signed by this one's key", is.Sign(t, nil, with(claims(), "iss", gl.URL())), ErrUnknownKey},
		{"aud: other audiences only", is.Sign(t, nil, with(claims(), "aud", []string{"sts.amazonaws.com", "vault"})), ErrWrongAudience},
		{"aud: ours with another case", is.Sign(t, nil, with(claims(), "aud", "Stagehand")), ErrWrongAudience},
		{"nbf ten minutes ahead", is.Sign(t, nil, with(claims(), "nbf", now.Add(10*time.Minute).Unix(), "exp", now.Add(20*time.Minute).Unix())), ErrNotYetValid},
		{"no exp", is.Sign(t, nil, func() map[string]any { c := claims(); delete(c, "exp"); return c }()), ErrExpired},
		{"repository with ..", is.Sign(t, nil, with(claims(), "repository", "acme/../payments-api")), ErrMalformedToken},
		{"repository . segment", is.Sign(t, nil, with(claims(), "repository", "acme/./payments-api")), ErrMalformedToken},
		{"GitHub repository with a third segment", is.Sign(t, nil, with(claims(), "repository", "acme/payments-api/x")), ErrMalformedToken},
		{"repository with a backslash", is.Sign(t, nil, with(claims(), "repository", `acme/..\payments-api`)), ErrMalformedToken},
		{"repository not a string", is.Sign(t, nil, with(claims(), "repository", []string{"acme/checkout-api"})), ErrMalformedToken},
		{"GitLab project_path with ..", gl.Sign(t, nil, with(gl.GitLabClaims("acme-group/checkout-api", "stagehand", now), "project_path", "acme-group/platform/../../acme-group/payments-api")), ErrMalformedToken},
		{"a namespace prefix that is not a namespace", is.Sign(t, nil, is.GitHubClaims("acme-evil/checkout-api", "stagehand", now)), ErrUntrustedRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(ctx, tt.token)
			if !errors.Is(err, tt.want) {
				t.Fatalf("verify = %+v, %v; want %v", c, err, tt.want)
			}
			if c != nil && !errors.Is(err, ErrUntrustedRepository) {
				t.Errorf("a refused token yields caller %+v", c)
			}
		})
	}

	t.Run("aud: an array holding ours and others is ours", func(t *testing.T) {
		c, err := v.Verify(ctx, is.Sign(t, nil, with(claims(), "aud", []string{"vault", "stagehand"})))
		if err != nil || c.Repository != "acme/checkout-api" {
			t.Errorf("verify = %+v, %v", c, err)
		}
	})
	t.Run("iat ahead with nbf behind: the issuer's nbf rules (GitHub backdates nbf)", func(t *testing.T) {
		if _, err := v.Verify(ctx, is.Sign(t, nil, with(claims(), "iat", now.Add(3*time.Minute).Unix()))); err != nil {
			t.Errorf("verify = %v", err)
		}
	})
	t.Run("GitLab subgroups are one repository path", func(t *testing.T) {
		c, err := v.Verify(ctx, gl.Sign(t, nil, gl.GitLabClaims("acme-group/platform/team-a/checkout-api", "stagehand", now)))
		if err != nil || c.Repository != "acme-group/platform/team-a/checkout-api" {
			t.Errorf("verify = %+v, %v", c, err)
		}
	})
	t.Run("a repository in another case is the same repository", func(t *testing.T) {
		c, err := v.Verify(ctx, is.Sign(t, nil, is.GitHubClaims("Acme/Checkout-API", "stagehand", now)))
		if err != nil || c.Repository != "Acme/Checkout-API" {
			t.Errorf("verify = %+v, %v", c, err)
		}
	})
}

// TestVerifyHostileIssuer: a trusted issuer that is slow, down, huge or
// rotating under load never lets a bad token through, never holds a
// request past the client's timeout, and keeps serving the keys it has.
func TestVerifyHostileIssuer(t *testing.T) {
	ctx := context.Background()
	clk := &clock{}
	newV := func(is *oidctest.Issuer, client *http.Client) *Verifier {
		return New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}}, client, 30*time.Second, clk.now)
	}
	token := func(is *oidctest.Issuer, key *oidctest.Key) string {
		return is.Sign(t, key, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))
	}

	t.Run("a huge key set is refused, not read whole", func(t *testing.T) {
		is := oidctest.New(t)
		is.ServeKeySet(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"keys": [], "pad": "`))
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 64 { // 4 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			_, _ = w.Write([]byte(`"}`))
		})
		_, err := newV(is, oidctest.Client(is)).Verify(ctx, token(is, nil))
		if !errors.Is(err, ErrIssuerUnavailable) || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Errorf("verify = %v, want ErrIssuerUnavailable saying the key set is too large", err)
		}
	})

	t.Run("a huge discovery document is refused, not read whole", func(t *testing.T) {
		is := oidctest.New(t)
		is.ServeDiscovery(func(w http.ResponseWriter, _ *http.Request) {
			oidctest.WriteJSON(w, is.Discovery(map[string]any{"pad": strings.Repeat("x", 2<<20)}))
		})
		_, err := newV(is, oidctest.Client(is)).Verify(ctx, token(is, nil))
		if !errors.Is(err, ErrIssuerUnavailable) || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Errorf("verify = %v, want ErrIssuerUnavailable saying the document is too large", err)
		}
		if err != nil && len(err.Error()) > 1024 {
			t.Errorf("the refusal is %d bytes long; the issuer's answer must not be echoed whole", len(err.Error()))
		}
	})

	t.Run("a key set over plain http is refused", func(t *testing.T) {
		is := oidctest.New(t)
		is.ServeDiscovery(func(w http.ResponseWriter, _ *http.Request) {
			oidctest.WriteJSON(w, is.Discovery(map[string]any{"jwks_uri": strings.Replace(is.URL(), "https://", "http://", 1) + "/.well-known/jwks"}))
		})
		_, err := newV(is, oidctest.Client(is)).Verify(ctx, token(is, nil))
		if !errors.Is(err, ErrIssuerUnavailable) || !strings.Contains(err.Error(), "is not an https:// URL") {
			t.Errorf("verify = %v, want ErrIssuerUnavailable naming the http jwks_uri", err)
		}
		if n := is.KeySetFetches(); n != 0 {
			t.Errorf("the key set was fetched %d times over http", n)
		}
	})

	t.Run("a slow key set: the request ends at the client's timeout; cached keys do not wait", func(t *testing.T) {
		is := oidctest.New(t)
		client := oidctest.Client(is)
		client.Timeout = 2 * time.Second
		v := newV(is, client)
		if _, err := v.Verify(ctx, token(is, nil)); err != nil {
			t.Fatal(err)
		}
		entered, release := make(chan struct{}, 1), make(chan struct{})
		is.ServeKeySet(func(http.ResponseWriter, *http.Request) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		})
		unknown := token(is, oidctest.NewKey(t, "rotated-while-slow"))
		known := token(is, nil)
		clk.add(time.Minute) // past the last fetch: an unknown key refetches
		done := make(chan error, 1)
		start := time.Now()
		go func() { _, err := v.Verify(ctx, unknown); done <- err }()
		select {
		case <-entered: // the refetch hangs in the issuer
		case <-time.After(5 * time.Second):
			t.Fatal("the unknown key did not refetch the key set")
		}
		knownStart := time.Now()
		if _, err := v.Verify(ctx, known); err != nil {
			t.Errorf("a token of a cached key during a slow refetch: %v", err)
		}
		if d := time.Since(knownStart); d > time.Second {
			t.Errorf("a token of a cached key waited %s for the slow refetch", d)
		}
		err := <-done
		close(release)
		if !errors.Is(err, ErrUnknownKey) {
			t.Errorf("unknown key during a slow refetch = %v, want ErrUnknownKey", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the slow refetch held the request %s, want about the client's 2s timeout", d)
		}
	})

	t.Run("rotation under load: old and new keys both verify while both are published, one refetch", func(t *testing.T) {
		is := oidctest.New(t)
		v := newV(is, oidctest.Client(is))
		old := is.Current()
		if _, err := v.Verify(ctx, token(is, old)); err != nil {
			t.Fatal(err)
		}
		fetches := is.KeySetFetches()
		next := is.Rotate(t, true)
		clk.add(time.Minute)
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			key := old
			if i%2 == 1 {
				key = next
			}
			tok := token(is, key)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := v.Verify(ctx, tok); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("verify during rotation: %v", err)
		}
		if got := is.KeySetFetches() - fetches; got != 1 {
			t.Errorf("20 concurrent tokens of the new key fetched the key set %d times, want 1", got)
		}
		// The issuer then retires the old key: once the set is fetched
		// again (another new key's token), the old key's tokens are refused.
		newest := is.Rotate(t, false)
		clk.add(time.Minute)
		if _, err := v.Verify(ctx, token(is, newest)); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctx, token(is, old)); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("a retired key's token = %v, want ErrUnknownKey", err)
		}
	})
}
