package ghapp

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"

	"github.com/stagehand-gitops/stagehand/internal/clock"
)

// DefaultAPIURL is GitHub's API, where tokens are minted unless WithAPIURL.
const DefaultAPIURL = "https://api.github.com"

// tokenSlack is how long before its expiry (on GitHub's clock) a token is replaced.
const tokenSlack = time.Minute

// Option configures New.
type Option func(*options) error

type options struct {
	apiURL string
	clock  *clock.Remote
}

// WithAPIURL sets the API where tokens are minted: GitHub Enterprise Server's
// with or without /api/v3, or a test server's (default DefaultAPIURL).
func WithAPIURL(u string) Option {
	return func(o *options) error {
		if u == "" {
			return errors.New("API URL: empty")
		}
		o.apiURL = APIBase(u)
		return nil
	}
}

// WithClock sets GitHub's clock (default: one followed from the local
// clock time.Now). The answers to the token requests feed it; a caller that
// also sends its API requests through the Transport's base may feed it from
// those (clock.Remote.Transport) and share it.
func WithClock(c *clock.Remote) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("clock: nil")
		}
		o.clock = c
		return nil
	}
}

// Transport holds a GitHub App installation's token: Token for git,
// RoundTrip for the REST API (which sends the token over base).
type Transport struct {
	base           http.RoundTripper
	apps           *ghinstallation.AppsTransport
	installationID int64
	apiURL         string
	clock          *clock.Remote

	mu      sync.Mutex // held while a token is minted: one mint at a time
	token   string
	expires time.Time // on GitHub's clock
}

// Installation is a GitHub App's installation: the App's id, the
// installation's, and the App's private key (PEM).
type Installation struct {
	AppID, InstallationID int64
	Key                   []byte
}

// New is the installation in; requests, token requests included, go over
// base (nil: http.DefaultTransport).
func New(base http.RoundTripper, in Installation, opts ...Option) (*Transport, error) {
	appID, installationID, key := in.AppID, in.InstallationID, in.Key
	o := options{apiURL: DefaultAPIURL}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring the GitHub App transport: %w", err)
		}
	}
	if appID == 0 || installationID == 0 {
		return nil, fmt.Errorf("configuring the GitHub App transport: app id %d and installation id %d must both be set", appID, installationID)
	}
	if o.clock == nil {
		o.clock = clock.NewRemote(time.Now)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	k, err := jwt.ParseRSAPrivateKeyFromPEM(key)
	if err != nil {
		return nil, fmt.Errorf("parsing the App's private key: %w", err)
	}
	// The token requests alone feed the clock here: a caller that shares it
	// may feed it from the API's answers too.
	apps, err := ghinstallation.NewAppsTransportWithOptions(o.clock.Transport(base), appID,
		ghinstallation.WithSigner(shiftedSigner{inner: ghinstallationSigner(k), clock: o.clock}))
	if err != nil {
		return nil, fmt.Errorf("configuring the GitHub App transport: %w", err)
	}
	apps.BaseURL = o.apiURL
	return &Transport{base: base, apps: apps, installationID: installationID, apiURL: o.apiURL, clock: o.clock}, nil
}

// Token returns the installation token, minting one when there is none or
// GitHub's clock says the last is within a minute of its expiry.
func (t *Transport) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.clock.Now().Before(t.expires.Add(-tokenSlack)) {
		return t.token, nil
	}
	tok, exp, err := t.mint(ctx)
	if err != nil {
		return "", err
	}
	t.token, t.expires = tok, exp
	return tok, nil
}

// RoundTrip sends req over base with the installation token.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+tok)
	if r.Header.Get("Accept") == "" {
		r.Header.Set("Accept", "application/vnd.github+json")
	}
	return t.base.RoundTrip(r)
}

// RefusedError is GitHub's refusal of a token request.
type RefusedError struct {
	Status  int
	Message string // GitHub's message, if it gave one
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("GitHub refused the installation token request: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// mint asks GitHub for a token; once more when it refused the JWT (401) and
// its answer moved the clock the JWT was stamped on by a second or more (a
// first request from a skewed host, or a clock stepped since): the offset
// of a clock not yet known is 0, the local clock.
func (t *Transport) mint(ctx context.Context) (string, time.Time, error) {
	before, _ := t.clock.Offset()
	tok, exp, err := t.post(ctx)
	var refused *RefusedError
	if errors.As(err, &refused) && refused.Status == http.StatusUnauthorized {
		if after, known := t.clock.Offset(); known && (after-before).Abs() >= time.Second {
			tok, exp, err = t.post(ctx)
		}
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("minting installation %d's token at %s: %w", t.installationID, t.apiURL, err)
	}
	return tok, exp, nil
}

// maxAnswer bounds what is read of a token answer.
const maxAnswer = 1 << 20

func (t *Transport) post(ctx context.Context) (string, time.Time, error) {
	url := fmt.Sprintf("%s/app/installations/%d/access_tokens", t.apiURL, t.installationID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("building the token request: %w", err)
	}
	resp, err := t.apps.RoundTrip(req) // signs the JWT, sets Accept
	if err != nil {
		return "", time.Time{}, fmt.Errorf("requesting the token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading the token answer: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e) // a message when GitHub gave one
		return "", time.Time{}, &RefusedError{Status: resp.StatusCode, Message: e.Message}
	}
	var a struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return "", time.Time{}, fmt.Errorf("decoding the token answer: %w", err)
	}
	if a.Token == "" || a.ExpiresAt.IsZero() {
		return "", time.Time{}, errors.New("decoding the token answer: no token or no expires_at")
	}
	return a.Token, a.ExpiresAt, nil
}

// APIBase turns an API URL into the base of its REST routes: scheme, host
// and, for GitHub Enterprise Server, /api/v3.
func APIBase(apiURL string) string {
	u := strings.TrimRight(apiURL, "/")
	if strings.HasSuffix(u, "/api/v3") || strings.Contains(u, "://api.") {
		return u
	}
	return u + "/api/v3"
}

// ghinstallationSigner is ghinstallation's own signer, RS256 with key.
func ghinstallationSigner(key *rsa.PrivateKey) ghinstallation.Signer {
	return ghinstallation.NewRSASigner(jwt.SigningMethodRS256, key)
}

// shiftedSigner stamps the JWT ghinstallation made on this host's time.Now
// on GitHub's clock before signing: its issued-at and expiry are moved by
// how far GitHub's clock (the local clock until a first answer) is from
// time.Now, in whole seconds.
type shiftedSigner struct {
	inner ghinstallation.Signer
	clock *clock.Remote
}

func (s shiftedSigner) Sign(claims jwt.Claims) (string, error) {
	if rc, ok := claims.(*jwt.RegisteredClaims); ok && rc.IssuedAt != nil && rc.ExpiresAt != nil {
		off := s.clock.Now().Sub(time.Now()).Truncate(time.Second) // GitHub wants whole seconds
		c := *rc
		c.IssuedAt = jwt.NewNumericDate(rc.IssuedAt.Add(off))
		c.ExpiresAt = jwt.NewNumericDate(rc.ExpiresAt.Add(off))
		claims = &c
	}
	return s.inner.Sign(claims)
}
