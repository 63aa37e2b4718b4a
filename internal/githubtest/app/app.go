package app

import (
	"crypto/rand"
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
	key  *rsa.PrivateKey
	id   int64
	inst int64
	ttl  time.Duration

	mu     sync.Mutex
	tokens map[string]time.Time // installation token → expiry
	issued int
}

// New returns App id with installation inst, whose installation tokens live for ttl, with a fresh key.
func New(id, inst int64, ttl time.Duration) (*App, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating app key: %w", err)
	}
	return &App{key: key, id: id, inst: inst, ttl: ttl, tokens: map[string]time.Time{}}, nil
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

// Valid reports whether tok is an installation token that has not expired.
func (a *App) Valid(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.tokens[tok]
	return ok && time.Now().Before(exp)
}

// Authenticate checks the Authorization header of a request to /app/...: a JWT signed by the app's private
// key (RS256, iss = app id, at most ten minutes of validity, issued and not expired by this server's clock,
// the host's), not a token. A refusal (401) says why in GitHub's words.
func (a *App) Authenticate(authorization string) error {
	raw, found := strings.CutPrefix(authorization, "Bearer ")
	if !found {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != "RS256" {
			return nil, fmt.Errorf("unexpected signing method %s", t.Method.Alg())
		}
		return &a.key.PublicKey, nil
	}, jwt.WithoutClaimsValidation())
	if err != nil {
		return fmt.Errorf("A JSON web token could not be decoded: %w", err)
	}
	// GitHub judges the JWT's times on its own clock, with no allowance: one
	// issued in its future (a host ahead) or expired (a host behind) is refused.
	now := time.Now()
	if claims.IssuedAt == nil || claims.IssuedAt.After(now) {
		return fmt.Errorf("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	}
	if claims.ExpiresAt == nil || !claims.ExpiresAt.After(now) {
		return fmt.Errorf("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	}
	if claims.Issuer != strconv.FormatInt(a.id, 10) {
		return fmt.Errorf("'Issuer' claim ('iss') must be the app id %d, got %q", a.id, claims.Issuer)
	}
	if claims.ExpiresAt == nil || claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute+time.Second {
		return fmt.Errorf("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

// Exchange answers POST /app/installations/{installation_id}/access_tokens of an authenticated request
// (installation is the path's id) with the status and body GitHub would: 201 and a new installation token,
// or 404 for another installation.
func (a *App) Exchange(installation string) (int, map[string]any, error) {
	if installation != strconv.FormatInt(a.inst, 10) {
		return http.StatusNotFound, nil, fmt.Errorf("Not Found")
	}
	tok := "ghs_" + randomHex(18)
	exp := time.Now().Add(a.ttl)
	a.mu.Lock()
	a.tokens[tok] = exp
	a.issued++
	a.mu.Unlock()
	return http.StatusCreated, map[string]any{
		"token": tok, "expires_at": exp.UTC().Format(time.RFC3339Nano), "repository_selection": "all",
		"permissions": map[string]any{"checks": "write", "contents": "write", "pull_requests": "write", "metadata": "read", "statuses": "write", "members": "read"},
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
