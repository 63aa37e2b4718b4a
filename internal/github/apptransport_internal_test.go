package github

import (
	"context"
	"net/http"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// ahead is a clock following a server off by off from this host's (as if
// its answers had said so).
func ahead(off time.Duration) *clock.Remote {
	r := clock.NewRemote(time.Now)
	now := time.Now()
	r.Observe(now, now, now.Add(off).Truncate(time.Second))
	return r
}

// TestShiftedSignerMovesTheJWTToGitHubsClock: the App's JWT is issued and
// expires on GitHub's clock, in whole seconds; unmoved before any answer.
func TestShiftedSignerMovesTheJWTToGitHubsClock(t *testing.T) {
	srv := githubtest.New(t)
	key, err := jwt.ParseRSAPrivateKeyFromPEM(srv.AppPrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	iat := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	for _, c := range []struct {
		name string
		host *clock.Remote
		want time.Duration
	}{
		{"GitHub two hours ahead", ahead(2 * time.Hour), 2 * time.Hour},
		{"GitHub two hours behind", ahead(-2 * time.Hour), -2 * time.Hour},
		{"no answer yet", clock.NewRemote(time.Now), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := shiftedSigner{inner: ghinstallationSigner(key), host: c.host}
			claims := &jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(iat.Add(2 * time.Minute)), Issuer: "1"}
			tok, err := s.Sign(claims)
			if err != nil {
				t.Fatal(err)
			}
			var got jwt.RegisteredClaims
			if _, _, err := jwt.NewParser().ParseUnverified(tok, &got); err != nil {
				t.Fatal(err)
			}
			if d := got.IssuedAt.Sub(iat) - c.want; d < -time.Second || d > time.Second || got.IssuedAt.Nanosecond() != 0 {
				t.Errorf("iat = %s, want %s moved by %s, in whole seconds", got.IssuedAt, iat, c.want)
			}
			if got.ExpiresAt.Sub(got.IssuedAt.Time) != 2*time.Minute {
				t.Errorf("exp - iat = %s, want 2m as signed", got.ExpiresAt.Sub(got.IssuedAt.Time))
			}
			if !claims.IssuedAt.Equal(iat) {
				t.Errorf("the caller's claims were changed: iat %s", claims.IssuedAt)
			}
		})
	}
}

// TestAppTransportRenewsOnGitHubsClock: an installation token expires on
// GitHub's clock; with GitHub two hours ahead of this host (the host two
// hours behind), a token GitHub minted for an hour has expired by GitHub's
// clock, and every request gets a fresh one (ghinstallation alone would
// send the expired token for two more hours); with the clocks together,
// one token serves every request.
func TestAppTransportRenewsOnGitHubsClock(t *testing.T) {
	for _, c := range []struct {
		name   string
		host   *clock.Remote
		tokens int
	}{
		{"clocks together", ahead(0), 1},
		{"GitHub two hours ahead", ahead(2 * time.Hour), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := githubtest.New(t)
			srv.CreateRepo("acme", "manifests", "main")
			// The JWTs are signed on the test's clock, githubtest's (it refuses one
			// issued in its future or expired, as GitHub does); the renewal reads c.host.
			tr, err := newAppTransport(http.DefaultTransport, srv.AppID(), srv.InstallationID(), srv.AppPrivateKeyPEM(), apiBase(srv.URL()), ahead(0))
			if err != nil {
				t.Fatal(err)
			}
			tr.host = c.host
			rest, err := gh.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(srv.URL(), srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, _, err := rest.Repositories.Get(context.Background(), "acme", "manifests"); err != nil {
					t.Fatal(err)
				}
			}
			if got := srv.CountRequests(http.MethodPost, "/app/installations/{installation_id}/access_tokens"); got != c.tokens {
				t.Errorf("%d installation tokens minted for 3 requests, want %d", got, c.tokens)
			}
		})
	}
}
