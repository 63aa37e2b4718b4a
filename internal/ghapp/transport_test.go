package ghapp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/ghapp"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

const tokenRoute = "/app/installations/{installation_id}/access_tokens"

// skewed is this host's clock off by d from the test's (githubtest's).
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// TestTokenOnGitHubsClock: with this host's clock two hours off GitHub's,
// the first JWT (stamped on the host's clock, GitHub's not yet known) is
// refused, and sent again on GitHub's clock learnt from the refusal; the
// token is then kept or renewed by GitHub's clock, not the host's (which
// would think an hour's token long expired when ahead, or a 30-second one
// good for two hours when behind).
func TestTokenOnGitHubsClock(t *testing.T) {
	for _, c := range []struct {
		name     string
		host     time.Duration
		ttl      time.Duration
		issued   int // tokens for two Token calls
		requests int // token requests, the refused ones included
	}{
		{"clocks together, token reused", 0, time.Hour, 1, 1},
		{"host two hours ahead, token reused", 2 * time.Hour, time.Hour, 1, 2},
		{"host two hours behind, token reused", -2 * time.Hour, time.Hour, 1, 2},
		{"host two hours behind, token within a minute of its expiry renewed", -2 * time.Hour, 30 * time.Second, 2, 3},
		{"host two hours ahead, token within a minute of its expiry renewed", 2 * time.Hour, 30 * time.Second, 2, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := githubtest.New(t, githubtest.WithTokenTTL(c.ttl))
			tr, err := ghapp.New(srv.Client().Transport, ghapp.Installation{AppID: srv.App().ID(), InstallationID: srv.App().InstallationID(), Key: srv.App().PrivateKeyPEM()},
				ghapp.WithAPIURL(srv.URL()), ghapp.WithClock(clock.NewRemote(skewed(c.host))))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				tok, err := tr.Token(context.Background())
				if err != nil {
					t.Fatalf("Token %d: %v", i+1, err)
				}
				if !srv.ValidToken(tok) {
					t.Fatalf("Token %d: %q is not a valid installation token", i+1, tok)
				}
			}
			if got := srv.App().TokensIssued(); got != c.issued {
				t.Errorf("%d tokens issued for two Token calls, want %d", got, c.issued)
			}
			if got := srv.CountRequests(http.MethodPost, tokenRoute); got != c.requests {
				t.Errorf("%d token requests, want %d", got, c.requests)
			}
		})
	}
}

// TestRoundTripOnGitHubsClock: the REST API through the Transport, from a
// host two hours behind: every request carries a valid token.
func TestRoundTripOnGitHubsClock(t *testing.T) {
	srv := githubtest.New(t, githubtest.WithTokenTTL(30*time.Second))
	srv.CreateRepo("acme", "manifests", "main")
	tr, err := ghapp.New(http.DefaultTransport, ghapp.Installation{AppID: srv.App().ID(), InstallationID: srv.App().InstallationID(), Key: srv.App().PrivateKeyPEM()},
		ghapp.WithAPIURL(srv.URL()), ghapp.WithClock(clock.NewRemote(skewed(-2*time.Hour))))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := gh.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := rest.Repositories.Get(context.Background(), "acme", "manifests"); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.App().TokensIssued(); got != 3 {
		t.Errorf("%d tokens for 3 requests with 30-second tokens, want 3 (each within a minute of expiry on GitHub's clock)", got)
	}
}

// TestRefusedOnce: a refusal that is not the clock's (a JWT signed by
// another key) is not sent again when the clock did not move, and once only
// when it did.
func TestRefusedOnce(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	for _, c := range []struct {
		name     string
		host     time.Duration
		requests int
	}{
		{"clocks together", 0, 1},
		{"host two hours ahead", 2 * time.Hour, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := githubtest.New(t)
			tr, err := ghapp.New(srv.Client().Transport, ghapp.Installation{AppID: srv.App().ID(), InstallationID: srv.App().InstallationID(), Key: other},
				ghapp.WithAPIURL(srv.URL()), ghapp.WithClock(clock.NewRemote(skewed(c.host))))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Token(context.Background())
			var refused *ghapp.RefusedError
			if !errors.As(err, &refused) || refused.Status != http.StatusUnauthorized {
				t.Fatalf("Token with another key = %v, want a 401 RefusedError", err)
			}
			if got := srv.CountRequests(http.MethodPost, tokenRoute); got != c.requests {
				t.Errorf("%d token requests, want %d", got, c.requests)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	srv := githubtest.New(t)
	for _, c := range []struct {
		name    string
		app     int64
		inst    int64
		key     []byte
		options []ghapp.Option
	}{
		{"no app id", 0, 1, srv.App().PrivateKeyPEM(), nil},
		{"no installation id", 1, 0, srv.App().PrivateKeyPEM(), nil},
		{"not a key", 1, 1, []byte("not a key"), nil},
		{"empty API URL", 1, 1, srv.App().PrivateKeyPEM(), []ghapp.Option{ghapp.WithAPIURL("")}},
		{"nil clock", 1, 1, srv.App().PrivateKeyPEM(), []ghapp.Option{ghapp.WithClock(nil)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ghapp.New(nil, ghapp.Installation{AppID: c.app, InstallationID: c.inst, Key: c.key}, c.options...); err == nil {
				t.Error("New: no error")
			}
		})
	}
}
