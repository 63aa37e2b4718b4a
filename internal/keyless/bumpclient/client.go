package bumpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// UsageError is an error the caller's setup causes (the URL of prbot
// serve, the CI's token settings): the command line or the job's
// configuration must change, trying again will not help.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// maxAnswer caps the answers read: a bump's result, an ID token.
const maxAnswer = 1 << 20

// Client posts bumps to one prbot serve.
type Client struct {
	endpoint string
	http     *http.Client
}

// New returns the client of the bump API of the prbot serve at base (such
// as https://prbot.example.com). The ID token is a credential: only https
// leaves the machine.
func New(base string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, usagef("%q: want the URL of prbot serve, e.g. https://prbot.example.com", base)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, usagef("%q: the ID token is a credential; want https (http only to localhost)", base)
	}
	return &Client{endpoint: strings.TrimRight(u.String(), "/") + keyless.BumpsPath,
		// The ID token goes to the URL given only: Go's client keeps the
		// Authorization header on a redirect to the same host name, another
		// port or plain http included.
		http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Endpoint is the URL bumps are posted to.
func (c *Client) Endpoint() string { return c.endpoint }

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RefusedError is an answer of the bump API other than 200, with its body
// (keyless.BumpError): the reason, and the result when a pull request was
// opened but not merged.
type RefusedError struct {
	Status int
	keyless.BumpError
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("bump refused by prbot serve (%d %s): %s", e.Status, e.Reason, e.BumpError.Error)
}

// Bump posts body with the ID token and returns the bump's result; a
// refusal is a *RefusedError. ctx bounds the call, an auto-merge's wait
// included.
func (c *Client) Bump(ctx context.Context, token string, body keyless.BumpBody) (*prbot.BumpResult, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the bump: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("posting the bump: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("posting the bump: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("reading the bump's answer: %w", err)
	}
	if len(out) > maxAnswer {
		return nil, fmt.Errorf("reading the bump's answer from %s: longer than %d bytes", c.endpoint, maxAnswer)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("posting the bump to %s: %s to %q: not followed (the ID token would go along); give --via the final URL", c.endpoint, resp.Status, resp.Header.Get("Location"))
	}
	if resp.StatusCode != http.StatusOK {
		r := &RefusedError{Status: resp.StatusCode}
		if err := json.Unmarshal(out, &r.BumpError); err != nil || r.BumpError.Error == "" {
			return nil, fmt.Errorf("posting the bump to %s: %s", c.endpoint, resp.Status)
		}
		return nil, r
	}
	var res prbot.BumpResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("decoding the bump's answer: %w", err)
	}
	return &res, nil
}

// IDToken gets the CI job's OIDC ID token: the variable tokenEnv names,
// else GitHub Actions' token request service (for audience), else
// $STAGEHAND_ID_TOKEN. env reads the job's variables.
func IDToken(ctx context.Context, env func(string) string, tokenEnv, audience string) (string, error) {
	if tokenEnv != "" {
		if t := strings.TrimSpace(env(tokenEnv)); t != "" {
			return t, nil
		}
		return "", usagef("--token-env %s: $%s is empty; on GitLab CI define it with id_tokens: {%s: {aud: stagehand}}", tokenEnv, tokenEnv, tokenEnv)
	}
	if reqURL := env("ACTIONS_ID_TOKEN_REQUEST_URL"); reqURL != "" {
		return githubIDToken(ctx, reqURL, env("ACTIONS_ID_TOKEN_REQUEST_TOKEN"), audience)
	}
	if t := strings.TrimSpace(env("STAGEHAND_ID_TOKEN")); t != "" {
		return t, nil
	}
	if env("GITHUB_ACTIONS") == "true" {
		return "", usagef("no $ACTIONS_ID_TOKEN_REQUEST_URL: give the job permissions: id-token: write")
	}
	return "", usagef("no CI ID token: on GitHub Actions give the job permissions: id-token: write; on GitLab CI define id_tokens: {STAGEHAND_ID_TOKEN: {aud: stagehand}} (or name the variable with --token-env)")
}

// githubIDToken asks GitHub Actions' token service for an ID token with
// the audience (what actions/core getIDToken does).
func githubIDToken(ctx context.Context, reqURL, reqToken, audience string) (string, error) {
	if reqToken == "" {
		return "", usagef("$ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set: give the job permissions: id-token: write")
	}
	u, err := url.Parse(reqURL)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token: $ACTIONS_ID_TOKEN_REQUEST_URL: %w", err)
	}
	q := u.Query()
	q.Set("audience", audience)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token: %w", err)
	}
	req.Header.Set("Authorization", "bearer "+reqToken)
	req.Header.Set("Accept", "application/json; api-version=2.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %s", resp.Status)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Value == "" {
		return "", errors.New("requesting an ID token from GitHub Actions: the answer holds no token")
	}
	return out.Value, nil
}
