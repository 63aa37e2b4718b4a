package github

import (
	"crypto/rsa"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"

	"github.com/stagehand-gitops/stagehand/internal/clock"
)

// appTransport authenticates as a GitHub App's installation on GitHub's
// clock. ghinstallation stamps the App's JWT and judges its installation
// token's expiry by this host's clock (time.Now): GitHub refuses a JWT
// issued in its future (a host 30 s ahead) or already expired (one two
// minutes behind), and a host behind keeps using a token GitHub has
// expired. Here the JWT's times are moved by how far GitHub's clock is from
// this host's (host, over time.Now, which is what ghinstallation reads),
// and the installation transport is replaced by a fresh one, which mints a
// new token, once GitHub's clock says its token is within a minute of
// expiry. Until a first answer from GitHub the host's clock is used.
type appTransport struct {
	apps           *ghinstallation.AppsTransport
	installationID int64
	baseURL        string
	host           *clock.Remote

	mu  sync.Mutex
	cur *ghinstallation.Transport
}

// newAppTransport is the installation transport of appID over base (whose
// answers host observes) with the PEM key; baseURL is the API's (empty:
// api.github.com).
func newAppTransport(base http.RoundTripper, appID, installationID int64, key []byte, baseURL string, host *clock.Remote) (*appTransport, error) {
	k, err := jwt.ParseRSAPrivateKeyFromPEM(key)
	if err != nil {
		return nil, fmt.Errorf("parsing the App's private key: %w", err)
	}
	apps, err := ghinstallation.NewAppsTransportWithOptions(base, appID, ghinstallation.WithSigner(shiftedSigner{inner: ghinstallationSigner(k), host: host}))
	if err != nil {
		return nil, err
	}
	if baseURL != "" {
		apps.BaseURL = baseURL
	}
	t := &appTransport{apps: apps, installationID: installationID, baseURL: apps.BaseURL, host: host}
	t.cur = t.fresh()
	return t, nil
}

func (t *appTransport) fresh() *ghinstallation.Transport {
	tr := ghinstallation.NewFromAppsTransport(t.apps, t.installationID)
	tr.BaseURL = t.baseURL
	return tr
}

// tokenSlack is how long before its expiry (on GitHub's clock) a token is replaced.
const tokenSlack = time.Minute

func (t *appTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	if exp, _, err := t.cur.Expiry(); err == nil && !t.host.Now().Before(exp.Add(-tokenSlack)) {
		t.cur = t.fresh()
	}
	cur := t.cur
	t.mu.Unlock()
	return cur.RoundTrip(req)
}

// ghinstallationSigner is ghinstallation's own signer, RS256 with key.
func ghinstallationSigner(key *rsa.PrivateKey) ghinstallation.Signer {
	return ghinstallation.NewRSASigner(jwt.SigningMethodRS256, key)
}

// shiftedSigner moves a JWT's issued-at and expiry from this host's clock
// to GitHub's before signing.
type shiftedSigner struct {
	inner ghinstallation.Signer
	host  *clock.Remote
}

func (s shiftedSigner) Sign(claims jwt.Claims) (string, error) {
	rc, ok := claims.(*jwt.RegisteredClaims)
	off, known := s.host.Offset()
	if ok && known && rc.IssuedAt != nil && rc.ExpiresAt != nil {
		off = off.Truncate(time.Second) // GitHub wants whole seconds
		c := *rc
		c.IssuedAt = jwt.NewNumericDate(rc.IssuedAt.Add(off))
		c.ExpiresAt = jwt.NewNumericDate(rc.ExpiresAt.Add(off))
		claims = &c
	}
	return s.inner.Sign(claims)
}
