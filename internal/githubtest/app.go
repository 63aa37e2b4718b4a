package githubtest

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// App is the GitHub App the server knows: its id, its installation and its private key, and the installation
// tokens it has issued (each valid until its expiry).
type App struct {
	log  *journal
	key  *rsa.PrivateKey
	id   int64
	inst int64
	ttl  time.Duration

	mu     sync.Mutex
	tokens map[string]time.Time // installation token → expiry
	issued int
}

// ID is the App's id.
func (a *App) ID() int64 { return a.id }

// InstallationID is the id of the App's installation whose tokens the server issues.
func (a *App) InstallationID() int64 { return a.inst }

// PrivateKeyPEM is the app's RSA private key in PKCS#1 PEM, as GitHub lets you download it.
func (a *App) PrivateKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(a.key)})
}

// TokensIssued counts the installation tokens handed out so far.
func (a *App) TokensIssued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issued
}

// valid reports whether tok is an installation token that has not expired.
func (a *App) valid(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.tokens[tok]
	return ok && time.Now().Before(exp)
}

// handle serves /app/... operations, which authenticate as the GitHub App with a JWT signed by the app's
// private key (RS256, iss = app id, at most ten minutes of validity, issued and not expired by this server's
// clock, the host's), not with a token.
func (a *App) handle(c *call, authorization string) response {
	raw, found := strings.CutPrefix(authorization, "Bearer ")
	if !found {
		return errorf(http.StatusUnauthorized, "A JSON web token could not be decoded")
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != "RS256" {
			return nil, fmt.Errorf("unexpected signing method %s", t.Method.Alg())
		}
		return &a.key.PublicKey, nil
	}, jwt.WithoutClaimsValidation())
	if err != nil {
		return errorf(http.StatusUnauthorized, "A JSON web token could not be decoded: %v", err)
	}
	// GitHub judges the JWT's times on its own clock, with no allowance: one
	// issued in its future (a host ahead) or expired (a host behind) is refused.
	now := time.Now()
	if claims.IssuedAt == nil || claims.IssuedAt.After(now) {
		return errorf(http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	}
	if claims.ExpiresAt == nil || !claims.ExpiresAt.After(now) {
		return errorf(http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	}
	if claims.Issuer != strconv.FormatInt(a.id, 10) {
		return errorf(http.StatusUnauthorized, "'Issuer' claim ('iss') must be the app id %d, got %q", a.id, claims.Issuer)
	}
	if claims.ExpiresAt == nil || claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute+time.Second {
		return errorf(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
	}
	if c.route.Method+" "+c.route.Path != "POST /app/installations/{installation_id}/access_tokens" {
		// An App endpoint Stagehand does not call: the test that calls it fails.
		a.log.violation("%s %s: an App endpoint githubtest does not emulate (only the installation token exchange)", c.route.Method, c.route.Path)
		return errorf(http.StatusNotImplemented, "githubtest: endpoint not emulated")
	}
	if c.params["installation_id"] != strconv.FormatInt(a.inst, 10) {
		return errorf(http.StatusNotFound, "Not Found")
	}
	tok := "ghs_" + randomHex(18)
	exp := time.Now().Add(a.ttl)
	a.mu.Lock()
	a.tokens[tok] = exp
	a.issued++
	a.mu.Unlock()
	return ok(http.StatusCreated, map[string]any{
		"token": tok, "expires_at": exp.UTC().Format(time.RFC3339Nano), "repository_selection": "all",
		"permissions": map[string]any{"checks": "write", "contents": "write", "pull_requests": "write", "metadata": "read", "statuses": "write", "members": "read"},
	})
}
