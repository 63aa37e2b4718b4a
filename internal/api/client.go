package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// The answers of the routes whose JSON is an envelope around the backend's
// records; the server writes them and Client reads them.
type (
	// EnvironmentsResponse is GET /api/v1/environments.
	EnvironmentsResponse struct {
		Environments []status.Environment `json:"environments"`
	}
	// HistoryResponse is GET /api/v1/environments/{env}/history: the
	// entries newest first, each without its manifest (approval.Entry.Summary).
	HistoryResponse struct {
		Environment string           `json:"environment"`
		History     []approval.Entry `json:"history"`
	}
	// HistoryEntryResponse is GET /api/v1/environments/{env}/history/{id}:
	// the entry with its resolved manifest.
	HistoryEntryResponse struct {
		Environment string          `json:"environment"`
		Entry       *approval.Entry `json:"entry"`
	}
)

// Client defaults.
const (
	// DefaultClientTimeout bounds each request of a Client, answer included.
	DefaultClientTimeout = time.Minute
	// DefaultMaxResponse is the largest answer a Client reads: a history
	// entry with its manifest, or the matrix of thousands of services, fits.
	DefaultMaxResponse = 8 << 20
)

// Client calls the API of a reconciler (server.listen) with a bearer token
// and decodes its answers into the server's own types. Every error answer
// is an *Error with the HTTP status and the server's message.
type Client struct {
	base    *url.URL
	token   string
	http    *http.Client
	maxBody int64
}

// ClientOption configures a Client.
type ClientOption func(*clientOptions) error

type clientOptions struct {
	transport http.RoundTripper
	timeout   time.Duration
	maxBody   int64
}

// WithTransport sends the Client's requests through rt (default: Go's
// default transport).
func WithTransport(rt http.RoundTripper) ClientOption {
	return func(o *clientOptions) error {
		if rt == nil {
			return errors.New("nil transport")
		}
		o.transport = rt
		return nil
	}
}

// WithClientTimeout bounds each request, answer included
// (DefaultClientTimeout).
func WithClientTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) error {
		if d <= 0 {
			return fmt.Errorf("client timeout %s: want a positive duration", d)
		}
		o.timeout = d
		return nil
	}
}

// WithMaxResponse caps the answers the Client reads at n bytes
// (DefaultMaxResponse); a longer one is an error, not a truncated record.
func WithMaxResponse(n int64) ClientOption {
	return func(o *clientOptions) error {
		if n <= 0 {
			return fmt.Errorf("response cap %d: want a positive number of bytes", n)
		}
		o.maxBody = n
		return nil
	}
}

// NewClient returns the client of the API at server (an http(s) URL such as
// https://stagehand.example.com) that sends token.
func NewClient(server, token string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("configuring API client: server %q: want an http(s) URL such as https://stagehand.example.com", server)
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("configuring API client: no token")
	}
	o := clientOptions{transport: http.DefaultTransport, timeout: DefaultClientTimeout, maxBody: DefaultMaxResponse}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring API client: %w", err)
		}
	}
	hc := &http.Client{Transport: o.transport, Timeout: o.timeout,
		// The token goes to the server named, never where it redirects: Go's
		// client keeps Authorization on a redirect to the same host, another
		// port or plain http included. The API itself never redirects.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{base: u, token: token, http: hc, maxBody: o.maxBody}, nil
}

// Server is the URL the Client calls.
func (c *Client) Server() string { return c.base.String() }

// Error is an error answer of the API: its HTTP status and the message
// and code of its {"error": ..., "code": ...} body (the body itself,
// trimmed, when it is not JSON).
type Error struct {
	Method, Path string
	Status       int
	Message      string
	// Code is the kind of error (CodeUnknownEnvironment, CodeNotPending,
	// httpserve.CodeBadRequest…): what a program matches on. Empty from a
	// server that sends none.
	Code string
	// Pending is the plan pending now, in the 409 answer to a decision on
	// another plan.
	Pending *approval.Pending
	// RetryAfter is the server's Retry-After (429, 503), 0 without one.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// errorBody is the API's error answer.
type errorBody struct {
	Error   string            `json:"error"`
	Code    string            `json:"code,omitempty"`
	Pending *approval.Pending `json:"pending,omitempty"`
}

// envPath is /api/v1/environments/{env} followed by rest; env is one path
// segment, never "." or ".." (which a URL would resolve away).
func envPath(env string, rest ...string) (string, error) {
	if env == "" || env == "." || env == ".." {
		return "", fmt.Errorf("environment %q: want an environment name", env)
	}
	return "/api/v1/environments/" + url.PathEscape(env) + strings.Join(rest, ""), nil
}

// request is one call of the API: its method, its path (escaped already,
// envPath) and its body (JSON; nil: none).
type request struct {
	method, path string
	body         any
}

// do sends the request and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, cl request, out any) error {
	method, path, body := cl.method, cl.path, cl.body
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding the request to %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	// path is escaped already (envPath): appended, not re-escaped.
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named below, once
		}
		return fmt.Errorf("%s %s%s: %w", method, c.base, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	if int64(len(b)) > c.maxBody {
		return fmt.Errorf("reading the answer to %s %s: longer than %d bytes", method, path, c.maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answerError(method, path, resp, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// answerError is the *Error of a non-2xx answer with body b.
func answerError(method, path string, resp *http.Response, b []byte) *Error {
	e := &Error{Method: method, Path: path, Status: resp.StatusCode}
	var eb errorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		e.Message, e.Code, e.Pending = eb.Error, eb.Code, eb.Pending
	} else {
		e.Message = strings.TrimSpace(string(b))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512] + "…"
		}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Message = fmt.Sprintf("redirected to %q: not followed (the token would go along); give the API's own URL", resp.Header.Get("Location"))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// Environments is GET /api/v1/environments: every environment, without
// layouts and histories.
func (c *Client) Environments(ctx context.Context) ([]status.Environment, error) {
	var out EnvironmentsResponse
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/environments"}, &out); err != nil {
		return nil, err
	}
	return out.Environments, nil
}

// Environment is GET /api/v1/environments/{env}: its status, pending plan
// and apply in flight.
func (c *Client) Environment(ctx context.Context, env string) (*status.Environment, error) {
	p, err := envPath(env)
	if err != nil {
		return nil, err
	}
	var out status.Environment
	if err := c.do(ctx, request{method: http.MethodGet, path: p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// History is GET /api/v1/environments/{env}/history: its entries, newest
// first, without their manifests.
func (c *Client) History(ctx context.Context, env string) ([]approval.Entry, error) {
	p, err := envPath(env, "/history")
	if err != nil {
		return nil, err
	}
	var out HistoryResponse
	if err := c.do(ctx, request{method: http.MethodGet, path: p}, &out); err != nil {
		return nil, err
	}
	return out.History, nil
}

// HistoryEntry is GET /api/v1/environments/{env}/history/{id}: one entry
// with its resolved manifest.
func (c *Client) HistoryEntry(ctx context.Context, env string, id int64) (*approval.Entry, error) {
	if id < 1 {
		return nil, fmt.Errorf("history entry id %d: want a positive id", id)
	}
	p, err := envPath(env, "/history/", strconv.FormatInt(id, 10))
	if err != nil {
		return nil, err
	}
	var out HistoryEntryResponse
	if err := c.do(ctx, request{method: http.MethodGet, path: p}, &out); err != nil {
		return nil, err
	}
	if out.Entry == nil {
		return nil, fmt.Errorf("decoding the answer to GET %s: no entry", p)
	}
	return out.Entry, nil
}

// Matrix is GET /api/v1/matrix: every service in every environment.
func (c *Client) Matrix(ctx context.Context) (*status.Matrix, error) {
	var out MatrixResponse
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/matrix"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Approve is POST /api/v1/environments/{env}/approve.
func (c *Client) Approve(ctx context.Context, env string, req DecisionRequest) (*DecisionResponse, error) {
	return c.decide(ctx, env, "/approve", req)
}

// Reject is POST /api/v1/environments/{env}/reject.
func (c *Client) Reject(ctx context.Context, env string, req DecisionRequest) (*DecisionResponse, error) {
	return c.decide(ctx, env, "/reject", req)
}

func (c *Client) decide(ctx context.Context, env, verb string, req DecisionRequest) (*DecisionResponse, error) {
	p, err := envPath(env, verb)
	if err != nil {
		return nil, err
	}
	var out DecisionResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: p, body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BreakGlass is POST /api/v1/environments/{env}/break-glass.
func (c *Client) BreakGlass(ctx context.Context, env string, req BreakGlassRequest) (*DecisionResponse, error) {
	p, err := envPath(env, "/break-glass")
	if err != nil {
		return nil, err
	}
	var out DecisionResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: p, body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rollback is POST /api/v1/environments/{env}/rollback.
func (c *Client) Rollback(ctx context.Context, env string, req RollbackRequest) (*RollbackResponse, error) {
	p, err := envPath(env, "/rollback")
	if err != nil {
		return nil, err
	}
	var out RollbackResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: p, body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Release is POST /api/v1/environments/{env}/release.
func (c *Client) Release(ctx context.Context, env string, req ReleaseRequest) (*ReleaseResponse, error) {
	p, err := envPath(env, "/release")
	if err != nil {
		return nil, err
	}
	var out ReleaseResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: p, body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Locks is the client of the lock routes (/api/v1/locks, /api/v1/check/),
// over the same server, token and HTTP client.
func (c *Client) Locks() (*lockapi.Client, error) {
	return lockapi.NewClient(c.base.String(), c.token, lockapi.WithHTTPClient(c.http))
}
