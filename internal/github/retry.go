package github

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy bounds how the client retries GitHub's transient answers: 500, 502, 503, 504, and rate limits
// (429, or 403 with Retry-After or X-RateLimit-Remaining: 0). Retry-After and X-RateLimit-Reset are
// honoured; other retries back off exponentially from BaseDelay.
type RetryPolicy struct {
	// MaxAttempts is the number of tries in all, the first included.
	MaxAttempts int
	// BaseDelay is the first back-off when GitHub names no wait; it doubles per attempt.
	BaseDelay time.Duration
	// MaxWait is the longest single wait honoured; a longer Retry-After or reset returns the error at once.
	MaxWait time.Duration
}

// DefaultRetryPolicy: 5 attempts, 200ms first back-off, waits up to one minute.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, BaseDelay: 200 * time.Millisecond, MaxWait: time.Minute}
}

type retryTransport struct {
	base   http.RoundTripper
	policy RetryPolicy
	now    func() time.Time
	// retried, when set, is told of every retry and why (retryReason).
	retried func(reason string)
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.GetBody == nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading request body: %w", err)
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("replaying request body: %w", err)
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		wait, retry := t.backoff(resp, attempt)
		if !retry || attempt >= t.policy.MaxAttempts || wait > t.policy.MaxWait {
			return resp, nil
		}
		if t.retried != nil {
			t.retried(retryReason(resp))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
	}
}

// retryReason is why resp, retried, was: rate_limited or unavailable.
func retryReason(resp *http.Response) string {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusForbidden:
		return "rate_limited"
	default:
		return "unavailable"
	}
}

// backoff says whether resp is worth retrying and how long to wait first.
func (t *retryTransport) backoff(resp *http.Response, attempt int) (time.Duration, bool) {
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	h := resp.Header
	rateLimited := h.Get("X-RateLimit-Remaining") == "0"
	switch {
	case resp.StatusCode == http.StatusInternalServerError, // GitHub's docs: retry it (as Octokit does)
		resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable,
		resp.StatusCode == http.StatusGatewayTimeout, resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden && (h.Get("Retry-After") != "" || rateLimited):
	default:
		return 0, false
	}
	if s := h.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return time.Duration(n) * time.Second, true
		}
		if at, err := http.ParseTime(s); err == nil {
			return max(at.Sub(now()), 0), true
		}
	}
	if rateLimited {
		if n, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(n, 0).Sub(now())+time.Second, 0), true
		}
	}
	d := t.policy.BaseDelay << (attempt - 1)
	return min(d, t.policy.MaxWait), true
}
