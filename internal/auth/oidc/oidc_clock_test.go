package oidc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/oidctest"
)

// TestVerifyOnIssuersClock: a token's exp, nbf and iat are judged on the
// issuer's clock (its answers' Date), not on prbot's: a prbot ten minutes
// fast accepts a GitHub Actions token (five minutes' life) and remembers
// it as used; one ten minutes slow refuses a token expired two minutes ago
// and one issued in the issuer's future.
func TestVerifyOnIssuersClock(t *testing.T) {
	type use struct {
		iat  time.Duration // from the issuer's (the real) time
		want error
	}
	for _, c := range []struct {
		name string
		skew time.Duration // prbot's clock from the issuer's
		uses []use         // in order, each token used twice
	}{
		{"prbot ten minutes fast", 10 * time.Minute, []use{{0, nil}, {-time.Minute, nil}, {-6 * time.Minute, ErrExpired}}},
		{"prbot ten minutes slow", -10 * time.Minute, []use{{0, nil}, {-7 * time.Minute, ErrExpired}, {10 * time.Minute, ErrNotYetValid}}},
		{"prbot two hours fast", 2 * time.Hour, []use{{0, nil}, {-6 * time.Minute, ErrExpired}}},
		{"prbot two hours slow", -2 * time.Hour, []use{{0, nil}, {-6 * time.Minute, ErrExpired}, {6 * time.Minute, ErrNotYetValid}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := oidctest.New(t)
			clk := &clock{off: c.skew}
			v := New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}},
				oidctest.Client(is), 30*time.Second, clk.now)
			ctx := context.Background()
			for _, u := range c.uses {
				t.Run(fmt.Sprintf("issued %s", u.iat), func(t *testing.T) {
					tok := is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now().Add(u.iat)))
					if _, err := v.Verify(ctx, tok); !errors.Is(err, u.want) || (u.want == nil && err != nil) {
						t.Fatalf("verify = %v, want %v", err, u.want)
					}
					if u.want != nil {
						return
					}
					if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrReplayed) {
						t.Errorf("the same token again = %v, want %v (remembered until it expires on the issuer's clock)", err, ErrReplayed)
					}
				})
			}
		})
	}
}

// TestVerifyRelearnsTheIssuersClock: once the key set is older than
// keyMaxAge it is read again before a token is judged, and with it the
// issuer's clock: after this host's clock is stepped an hour and more
// forward, a fresh token is still valid.
func TestVerifyRelearnsTheIssuersClock(t *testing.T) {
	is := oidctest.New(t)
	clk := &clock{}
	v := New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}},
		oidctest.Client(is), 30*time.Second, clk.now)
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))); err != nil {
		t.Fatal(err)
	}
	fetches := is.KeySetFetches()
	clk.add(keyMaxAge + time.Minute) // the host's clock stepped forward
	if _, err := v.Verify(ctx, is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))); err != nil {
		t.Errorf("a fresh token after the host's clock stepped %s: %v", keyMaxAge+time.Minute, err)
	}
	if got := is.KeySetFetches() - fetches; got != 1 {
		t.Errorf("key set read %d times after it grew older than %s, want 1", got, keyMaxAge)
	}
	if _, err := v.Verify(ctx, is.Sign(t, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))); err != nil {
		t.Fatal(err)
	}
	if got := is.KeySetFetches() - fetches; got != 1 {
		t.Errorf("key set read %d times, want 1: it was read again a moment ago", got)
	}
}
