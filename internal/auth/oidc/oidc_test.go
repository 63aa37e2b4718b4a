package oidc

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/stagehand-gitops/stagehand/internal/oidctest"
)

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
	is := oidctest.New(t)
	gl := oidctest.New(t)
	clk := &clock{}
	v := New([]Issuer{
		{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}},
		{URL: gl.URL(), Audience: "stagehand", Claims: ClaimsGitLab, Namespaces: []string{"acme-group"}},
	}, oidctest.Client(is, gl), 30*time.Second, clk.now)
	ctx := context.Background()

	c, err := v.Verify(ctx, is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now())))
	if err != nil {
		t.Fatal(err)
	}
	want := Caller{Issuer: is.URL(), Repository: "acme/checkout-api", Ref: "refs/heads/main", WorkflowRef: "acme/checkout-api/.github/workflows/release.yml@refs/heads/main",
		Event: "push", Actor: "octocat", Run: "6024592231", Subject: "repo:acme/checkout-api:ref:refs/heads/main"}
	c.TokenID, c.Expiry = "", time.Time{}
	if *c != want {
		t.Errorf("GitHub caller = %+v\nwant %+v", *c, want)
	}
	c, err = v.Verify(ctx, gl.Sign(t, nil, gl.GitLabClaims("acme-group/platform/checkout-api", "stagehand", clk.now())))
	if err != nil {
		t.Fatal(err)
	}
	want = Caller{Issuer: gl.URL(), Repository: "acme-group/platform/checkout-api", Ref: "refs/heads/main", WorkflowRef: "gitlab.example.com/acme-group/platform/checkout-api//.gitlab-ci.yml@refs/heads/main",
		Event: "push", Actor: "sample-user", Run: "302", Subject: "project_path:acme-group/platform/checkout-api:ref_type:branch:ref:main"}
	c.TokenID, c.Expiry = "", time.Time{}
	if *c != want {
		t.Errorf("GitLab caller = %+v\nwant %+v", *c, want)
	}

	stranger := oidctest.New(t)
	unpublished := oidctest.NewKey(t, "never-published")
	noJTI := is.GitHubClaims("acme/checkout-api", "stagehand", clk.now())
	delete(noJTI, "jti")
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"wrong audience", is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "sts.amazonaws.com", clk.now())), ErrWrongAudience},
		{"expired", is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now().Add(-time.Hour))), ErrExpired},
		{"unknown issuer", stranger.Sign(t, nil, stranger.GitHubClaims("acme/checkout-api", "stagehand", clk.now())), ErrUnknownIssuer},
		{"unknown key", is.Sign(t, unpublished, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now())), ErrUnknownKey},
		{"forged signature under a published kid", is.Sign(t, oidctest.NewKey(t, is.Current().KID), is.GitHubClaims("acme/checkout-api", "stagehand", clk.now())), ErrBadSignature},
		{"no jti", is.Sign(t, nil, noJTI), ErrNoTokenID},
		{"not a JWT", "abc.def", ErrMalformedToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := v.Verify(ctx, tt.token); !errors.Is(err, tt.want) {
				t.Errorf("verify = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("replay", func(t *testing.T) {
		tok := is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrReplayed) {
			t.Errorf("second use = %v, want ErrReplayed", err)
		}
	})

	t.Run("a genuine token of an untrusted repository takes no place in the replay memory", func(t *testing.T) {
		before := len(v.issuers[is.URL()].replay.seen)
		for range 3 {
			tok := is.Sign(t, nil, is.GitHubClaims("evil/checkout-api", "stagehand", clk.now()))
			if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrUntrustedRepository) {
				t.Fatalf("verify = %v, want ErrUntrustedRepository", err)
			}
		}
		if got := len(v.issuers[is.URL()].replay.seen); got != before {
			t.Errorf("replay memory grew from %d to %d entries", before, got)
		}
	})

	t.Run("unknown keys refetch the key set at most once per refresh; rotation is picked up", func(t *testing.T) {
		clk.add(time.Minute) // past the refetch the unknown key above caused
		hits := int32(is.KeySetFetches())
		for i := 0; i < 5; i++ {
			if _, err := v.Verify(ctx, is.Sign(t, unpublished, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))); !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("verify = %v, want ErrUnknownKey", err)
			}
		}
		if got := int32(is.KeySetFetches()) - hits; got != 1 {
			t.Errorf("5 tokens with an unknown key fetched the key set %d times, want 1", got)
		}
		// The issuer rotates its key; once the refresh interval has passed
		// the new key's first token fetches it.
		k := is.Rotate(t, false)
		clk.add(31 * time.Second)
		if _, err := v.Verify(ctx, is.Sign(t, k, is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))); err != nil {
			t.Fatalf("token of the rotated key: %v", err)
		}
		if got := is.DiscoveryFetches(); got != 1 {
			t.Errorf("discovery fetched %d times, want once", got)
		}
	})

	t.Run("issuer down after the first token: its cached keys still verify", func(t *testing.T) {
		flaky := oidctest.New(t)
		v := New([]Issuer{{URL: flaky.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}}, oidctest.Client(flaky), 30*time.Second, clk.now)
		if _, err := v.Verify(ctx, flaky.Sign(t, nil, flaky.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))); err != nil {
			t.Fatal(err)
		}
		tok := flaky.Sign(t, nil, flaky.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))
		unknown := flaky.Sign(t, oidctest.NewKey(t, "rotated-while-down"), flaky.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))
		flaky.Close()
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Errorf("token of a cached key with the issuer down: %v", err)
		}
		if _, err := v.Verify(ctx, unknown); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("token of an unknown key with the issuer down = %v, want ErrUnknownKey", err)
		}
	})

	t.Run("issuer unreachable at the first token: unavailable, not unauthorized", func(t *testing.T) {
		down := oidctest.New(t)
		tok := down.Sign(t, nil, down.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))
		url := down.URL()
		down.Close()
		v := New([]Issuer{{URL: url, Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}}, oidctest.Client(down), 30*time.Second, clk.now)
		if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) {
			t.Errorf("verify = %v, want ErrIssuerUnavailable", err)
		}
	})
}

// BenchmarkVerify measures one bump API token verification with a warm
// key set cache: signature (RS256, 2048-bit), claims, audience, replay
// ("full"), against the bare signature check it cannot avoid ("signature").
func BenchmarkVerify(b *testing.B) {
	is := oidctest.New(b)
	v := New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}}, oidctest.Client(is), 30*time.Second, time.Now)
	ctx := context.Background()
	// Signing is slow: sign a pool of distinct tokens and forget the used
	// ids each round (a real request carries a fresh token).
	tokens := make([]string, 256)
	for i := range tokens {
		tokens[i] = is.Sign(b, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))
	}
	if _, err := v.Verify(ctx, tokens[0]); err != nil { // warm the caches
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if i%len(tokens) == 0 {
				v.issuers[is.URL()].replay = newReplayCache(v.issuers[is.URL()].clock.Now)
			}
			if _, err := v.Verify(ctx, tokens[i%len(tokens)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("signature", func(b *testing.B) {
		key := is.Current().Public()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			jws, err := jose.ParseSigned(tokens[i%len(tokens)], []jose.SignatureAlgorithm{jose.RS256})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jws.Verify(key); err != nil {
				b.Fatal(err)
			}
		}
	})
	if n := is.KeySetFetches(); n != 1 {
		b.Errorf("key set fetched %d times, want once", n)
	}
}

// TestVerifyTriesFewKeys: a token that names no key is checked against the
// first 8 keys of the issuer's set only, however many it publishes, so a
// token anyone can send costs at most 8 signature checks: signed by the
// first key it passes, by the tenth it is refused.
func TestVerifyTriesFewKeys(t *testing.T) {
	is := oidctest.New(t)
	clk := &clock{}
	var keys []*oidctest.Key
	var set []jose.JSONWebKey
	for range maxKeysTried + 2 {
		k := oidctest.NewKey(t, "") // no kid: neither in the set nor in the token
		keys = append(keys, k)
		set = append(set, k.Public())
	}
	is.ServeKeySet(func(w http.ResponseWriter, _ *http.Request) { oidctest.WriteJSON(w, jose.JSONWebKeySet{Keys: set}) })
	v := New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}},
		oidctest.Client(is), 30*time.Second, clk.now)
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.Sign(t, keys[0], is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))); err != nil {
		t.Errorf("signed by the first key: %v", err)
	}
	if _, err := v.Verify(ctx, is.Sign(t, keys[maxKeysTried-1], is.GitHubClaims("acme/checkout-api", "stagehand", clk.now()))); err != nil {
		t.Errorf("signed by the 8th key: %v", err)
	}
	_, err := v.Verify(ctx, is.Sign(t, keys[maxKeysTried+1], is.GitHubClaims("acme/checkout-api", "stagehand", clk.now())))
	if !errors.Is(err, ErrBadSignature) {
		t.Errorf("signed by the 10th key = %v, want %v", err, ErrBadSignature)
	}
}

// TestReplayCacheSurvivesIssuerClockStepBack: a used token is remembered on
// this process's clock too, so the issuer's clock going past its expiry
// and then stepping back (a cached answer, a skewed front) does not make
// it usable again.
func TestReplayCacheSurvivesIssuerClockStepBack(t *testing.T) {
	issuer := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	local := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := newReplayCache(func() time.Time { return issuer })
	r.local = func() time.Time { return local }
	exp := issuer.Add(5 * time.Minute)
	if err := r.use("jti-1", exp); err != nil {
		t.Fatal(err)
	}
	issuer, local = issuer.Add(6*time.Minute), local.Add(6*time.Minute) // expired; a prune runs
	if err := r.use("jti-2", issuer.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	issuer = issuer.Add(-3 * time.Minute) // the issuer's clock steps back: jti-1 looks valid again
	if err := r.use("jti-1", exp); !errors.Is(err, ErrReplayed) {
		t.Errorf("jti-1 after the issuer's clock stepped back = %v, want ErrReplayed", err)
	}
	issuer, local = issuer.Add(time.Hour), local.Add(time.Hour) // long gone on both clocks
	r.use("jti-3", issuer.Add(5*time.Minute))
	if _, kept := r.seen["jti-1"]; kept {
		t.Error("jti-1 kept an hour after it expired on both clocks")
	}
}
