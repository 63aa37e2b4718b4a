package lockapi

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

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Client talks to the lock REST API served by Handler.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client of the server at baseURL (such as
// https://stagehand.example.com), authenticating with token. It takes
// WithHTTPClient.
func NewClient(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host[:port]", baseURL)
	}
	o, err := newOptions("NewClient", opts, optHTTPClient)
	if err != nil {
		return nil, fmt.Errorf("configuring lock client: %w", err)
	}
	c := &Client{base: u, token: token, http: o.http}
	if token == "" {
		return nil, errors.New("configuring lock client: a token is required")
	}
	return c, nil
}

// APIError is an error answer of the server other than 423 Locked. It
// wraps lock.ErrNotFound (404) or lock.ErrConflict (409) when it means those.
type APIError struct {
	StatusCode int
	Message    string
	// Code is the kind of error the server named (CodeLockNotFound…; ""
	// from a server that names none).
	Code string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.StatusCode)
}

// Unwrap maps status codes to this package's sentinel errors.
func (e *APIError) Unwrap() error {
	switch e.StatusCode {
	case http.StatusNotFound:
		return lock.ErrNotFound
	case http.StatusConflict:
		return lock.ErrConflict
	}
	return nil
}

// apiCall is one request to the lock API.
type apiCall struct {
	method string
	path   string // beneath the API's base URL
	query  url.Values
	body   any // sent as JSON when not nil
}

// do sends cl and decodes a successful answer into out (when not nil).
func (c *Client) do(ctx context.Context, cl apiCall, out any) error {
	u := *c.base
	u.Path = c.base.Path + cl.path
	u.RawQuery = cl.query.Encode()
	var rd io.Reader
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("calling lock API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading lock API response: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusLocked:
		var cr CheckResponse
		if err := json.Unmarshal(b, &cr); err != nil {
			return fmt.Errorf("decoding 423 response: %w", err)
		}
		return &lock.LockedError{Path: cr.Path, Type: cr.Type, Locks: cr.Locks}
	case resp.StatusCode >= 300:
		var er errorResponse
		if json.Unmarshal(b, &er) != nil || er.Error == "" {
			er.Error = strings.TrimSpace(string(b))
		}
		apiErr := &APIError{StatusCode: resp.StatusCode, Message: er.Error, Code: er.Code}
		if resp.StatusCode == http.StatusBadRequest {
			return &lock.InvalidError{Err: apiErr}
		}
		return apiErr
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decoding lock API response: %w", err)
		}
	}
	return nil
}

// escapePath validates and lowercases p and escapes it for a URL.
func escapePath(p string) (string, error) {
	p, err := lock.NormalizePath(p)
	if err != nil {
		return "", &lock.InvalidError{Err: err}
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), nil
}

// lock.Lock takes a lock; a *lock.LockedError when the path is locked.
func (c *Client) Lock(ctx context.Context, req LockRequest) (lock.Lock, error) {
	var out LockResponse
	if err := c.do(ctx, apiCall{method: http.MethodPost, path: "/api/v1/locks", body: req}, &out); err != nil {
		return lock.Lock{}, err
	}
	return out.Lock, nil
}

// Get returns the lock at exactly path.
func (c *Client) Get(ctx context.Context, path string) (lock.Lock, error) {
	ep, err := escapePath(path)
	if err != nil {
		return lock.Lock{}, err
	}
	var out LockResponse
	if err := c.do(ctx, apiCall{method: http.MethodGet, path: "/api/v1/locks/" + ep}, &out); err != nil {
		return lock.Lock{}, err
	}
	return out.Lock, nil
}

// Check returns the locks that block an action of type t at path.
func (c *Client) Check(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error) {
	ep, err := escapePath(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{"type": {string(t)}, "recursive": {strconv.FormatBool(recursive)}}
	var out CheckResponse
	err = c.do(ctx, apiCall{method: http.MethodGet, path: "/api/v1/check/" + ep, query: q}, &out)
	var le *lock.LockedError
	if errors.As(err, &le) {
		return le.Locks, nil
	}
	if err != nil {
		return nil, err
	}
	return out.Locks, nil
}

// Unlock removes the lock of type t at path (every one beneath it with recursive).
func (c *Client) Unlock(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error) {
	ep, err := escapePath(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{"type": {string(t)}, "recursive": {strconv.FormatBool(recursive)}}
	var out ListResponse
	if err := c.do(ctx, apiCall{method: http.MethodDelete, path: "/api/v1/locks/" + ep, query: q}, &out); err != nil {
		return nil, err
	}
	return out.Locks, nil
}

// Prune removes the expired locks at and beneath prefix ("" for all).
func (c *Client) Prune(ctx context.Context, prefix string) ([]lock.Lock, error) {
	q := url.Values{"expired": {"true"}}
	if prefix != "" {
		q.Set("path", prefix)
	}
	var out ListResponse
	if err := c.do(ctx, apiCall{method: http.MethodDelete, path: "/api/v1/locks", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Locks, nil
}

// List returns the locks at and beneath prefix ("" for all).
func (c *Client) List(ctx context.Context, prefix string) ([]lock.Lock, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("path", prefix)
	}
	var out ListResponse
	if err := c.do(ctx, apiCall{method: http.MethodGet, path: "/api/v1/locks", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Locks, nil
}
