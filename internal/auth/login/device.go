package login

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sentinel ends of a device flow that a person, not the network, caused.
var (
	// ErrExpired: the code was not entered before it expired.
	ErrExpired = errors.New("the code expired before it was entered")
	// ErrDenied: the person declined the authorisation on GitHub.
	ErrDenied = errors.New("the authorisation was declined on GitHub")
)

// maxAnswer caps GitHub's answers to the device flow's requests.
const maxAnswer = 1 << 20

// DeviceFlow is GitHub's OAuth device flow for one OAuth (or GitHub App)
// client with the device flow enabled.
type DeviceFlow struct {
	web      string
	clientID string
	scope    string
	http     *http.Client
}

// Option configures a DeviceFlow.
type Option func(*options) error

type options struct {
	scope string
	http  *http.Client
}

// WithScope asks for OAuth scopes (none by default: the reconciler only
// reads who the token is).
func WithScope(scope string) Option {
	return func(o *options) error { o.scope = scope; return nil }
}

// WithHTTPClient sends the flow's requests with c (default: a client with a
// 30-second timeout per request).
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("nil HTTP client")
		}
		o.http = c
		return nil
	}
}

// NewDeviceFlow returns the device flow of clientID on the GitHub whose web
// address is githubURL (https://github.com, or a GitHub Enterprise Server's).
func NewDeviceFlow(githubURL, clientID string, opts ...Option) (*DeviceFlow, error) {
	if u, err := url.Parse(githubURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("configuring the device flow: GitHub URL %q: want an http(s) URL such as https://github.com", githubURL)
	}
	if strings.TrimSpace(clientID) == "" {
		return nil, errors.New("configuring the device flow: no client ID")
	}
	o := options{http: &http.Client{Timeout: 30 * time.Second}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring the device flow: %w", err)
		}
	}
	return &DeviceFlow{web: strings.TrimRight(githubURL, "/"), clientID: clientID, scope: o.scope, http: o.http}, nil
}

// Code is GitHub's answer to POST /login/device/code: the code a person
// enters at VerificationURI, and the device code and interval the flow
// polls with.
type Code struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"`
	Interval        int    `json:"interval"`
}

// oauthError is the error part of GitHub's answers.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// Start asks GitHub for a device code.
func (f *DeviceFlow) Start(ctx context.Context) (*Code, error) {
	var ans struct {
		Code
		oauthError
	}
	if err := f.post(ctx, "/login/device/code", url.Values{"client_id": {f.clientID}, "scope": {f.scope}}, &ans); err != nil {
		return nil, err
	}
	if ans.Error != "" || ans.DeviceCode == "" {
		return nil, fmt.Errorf("asking GitHub for a device code: %s %s", ans.Error, ans.Description)
	}
	return &ans.Code, nil
}

// Wait polls GitHub until the person entered c's code and authorised the
// client, and returns the user token GitHub issued. It waits the interval
// GitHub gives (at least a second), longer after a slow_down, until ctx
// ends; ErrExpired and ErrDenied end it early.
func (f *DeviceFlow) Wait(ctx context.Context, c *Code) (string, error) {
	interval := time.Duration(max(c.Interval, 1)) * time.Second
	poll := url.Values{"client_id": {f.clientID}, "device_code": {c.DeviceCode}, "grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the code to be entered: %w", ctx.Err())
		case <-time.After(interval):
		}
		var ans struct {
			AccessToken string `json:"access_token"`
			Interval    int    `json:"interval"`
			oauthError
		}
		if err := f.post(ctx, "/login/oauth/access_token", poll, &ans); err != nil {
			return "", err
		}
		switch ans.Error {
		case "":
			if ans.AccessToken == "" {
				return "", errors.New("GitHub answered without a token")
			}
			return ans.AccessToken, nil
		case "authorization_pending":
		case "slow_down":
			// GitHub says how long to wait from now on; without a figure, five seconds more (RFC 8628).
			if ans.Interval > 0 {
				interval = time.Duration(ans.Interval) * time.Second
			} else {
				interval += 5 * time.Second
			}
		case "expired_token":
			return "", ErrExpired
		case "access_denied":
			return "", ErrDenied
		default:
			return "", fmt.Errorf("logging in: GitHub answered %s: %s", ans.Error, ans.Description)
		}
	}
}

// post sends form to GitHub's path and decodes the JSON answer into out.
func (f *DeviceFlow) post(ctx context.Context, path string, form url.Values, out any) error {
	u := f.web + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("POST %s: %w", u, err)
	}
	if len(b) > maxAnswer {
		return fmt.Errorf("POST %s: an answer longer than %d bytes", u, maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		return fmt.Errorf("POST %s: %s: %s", u, resp.Status, msg)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: decoding the answer: %w", u, err)
	}
	return nil
}
