package ghapp

import (
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// following is GitHub's clock as followed from a host off by host from
// time.Now, after an answer saying GitHub is off by github (known false: no
// answer yet).
func following(host, github time.Duration, known bool) *clock.Remote {
	r := clock.NewRemote(func() time.Time { return time.Now().Add(host) })
	if known {
		now := time.Now().Add(host)
		r.Observe(now, now, time.Now().Add(github).Truncate(time.Second))
	}
	return r
}

// TestShiftedSignerStampsOnGitHubsClock: the App's JWT is issued and
// expires on GitHub's clock, in whole seconds; on the local clock before any
// answer.
func TestShiftedSignerStampsOnGitHubsClock(t *testing.T) {
	srv := githubtest.New(t)
	key, err := jwt.ParseRSAPrivateKeyFromPEM(srv.App().PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	iat := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	for _, c := range []struct {
		name  string
		clock *clock.Remote
		want  time.Duration
	}{
		{"GitHub two hours ahead", following(0, 2*time.Hour, true), 2 * time.Hour},
		{"GitHub two hours behind", following(0, -2*time.Hour, true), -2 * time.Hour},
		{"host two hours ahead, GitHub known", following(2*time.Hour, 0, true), 0},
		{"no answer yet", following(0, 0, false), 0},
		{"no answer yet, host two hours ahead", following(2*time.Hour, 0, false), 2 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := shiftedSigner{inner: ghinstallationSigner(key), clock: c.clock}
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
