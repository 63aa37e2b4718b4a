package github

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LowBudget is the share of the hourly rate limit below which the client stops asking GitHub again for
// what it polls: a listing of a commit's check runs it made before is answered from its copy until the
// window resets. Writes, first reads and permission checks (never answered from a copy: a revoked
// approver must not approve) still go out.
const LowBudget = 0.10

// The responses kept for conditional requests: at most maxCached of them and
// maxCachedBytes in all; an answer larger than maxCachedBody is not kept.
const (
	maxCached      = 512
	maxCachedBytes = 16 << 20
	maxCachedBody  = 1 << 20
)

// budget is what the client knows of its rate limit, from the X-RateLimit-* headers of the last answer,
// and its metrics.
type budget struct {
	requests  *prometheus.CounterVec
	remaining prometheus.Gauge
	limit     prometheus.Gauge
	retries   *prometheus.CounterVec
	now       func() time.Time

	mu          sync.Mutex
	left, total int
	reset       time.Time
}

func newBudget() *budget {
	return &budget{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_github_requests_total",
			Help: "Requests sent to the GitHub API, by HTTP status code (304: a conditional request answered from the client's copy, free of rate limit).",
		}, []string{"code"}),
		remaining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stagehand_github_rate_limit_remaining",
			Help: "Requests left in the GitHub API's current rate-limit window (X-RateLimit-Remaining of the last answer).",
		}),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stagehand_github_rate_limit",
			Help: "Requests allowed per rate-limit window (X-RateLimit-Limit of the last answer).",
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_github_retries_total",
			Help: "Requests to the GitHub API sent again after a transient answer, by reason: rate_limited (429, or 403 with Retry-After or no requests left) or unavailable (500, 502, 503, 504).",
		}, []string{"reason"}),
		now: time.Now,
	}
}

// observe counts resp and reads its rate-limit headers.
func (b *budget) observe(resp *http.Response) {
	b.requests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	h := resp.Header
	left, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	total, err2 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	reset, err3 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || h.Get("X-RateLimit-Resource") != "core" && h.Get("X-RateLimit-Resource") != "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left, b.total, b.reset = left, total, time.Unix(reset, 0)
	b.remaining.Set(float64(left))
	b.limit.Set(float64(total))
}

// retried counts a retry of the client's retry transport.
func (b *budget) retried(reason string) { b.retries.WithLabelValues(reason).Inc() }

// low reports whether less than LowBudget of the limit is left in a window that has not reset yet.
func (b *budget) low() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > 0 && float64(b.left) < LowBudget*float64(b.total) && b.now().Before(b.reset)
}

// metered counts every answer (retries included) and keeps the budget current.
type metered struct {
	base   http.RoundTripper
	budget *budget
}

func (m metered) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if err == nil {
		m.budget.observe(resp)
	}
	return resp, err
}

// conditional makes every GET it has answered before conditional (If-None-Match with the ETag of the copy
// it kept), and turns GitHub's 304 back into the copy, so callers see the 200 they expect. GitHub does
// not count a 304 against the rate limit, so an unchanged poll is free. With the budget low, a GET it has
// a copy of is answered from the copy without asking.
type conditional struct {
	base   http.RoundTripper
	budget *budget

	mu    sync.Mutex
	cache map[string]cachedResponse
	order []string // oldest first, for eviction
	bytes int      // of the raw responses kept
}

type cachedResponse struct {
	etag string
	raw  []byte // the whole 200 response, as httputil.DumpResponse wrote it
	poll bool   // an answer to a poll (isPoll)
	// fresh is false once this client wrote something after the answer came:
	// the copy may then be behind, and a low budget does not answer from it
	// (its ETag still saves the counted 200 when nothing changed).
	fresh bool
}

func (c *conditional) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("Range") != "" {
		resp, err := c.base.RoundTrip(req)
		if err == nil && req.Method != http.MethodHead {
			c.stalePolls() // a write may change what a poll lists: never answer one from an older copy
		}
		return resp, err
	}
	key := req.URL.String() + " " + req.Header.Get("Accept")
	c.mu.Lock()
	cached, ok := c.cache[key]
	c.mu.Unlock()
	if ok && cached.fresh && c.budget.low() && isPoll(req.URL.Path) {
		return cached.response(req)
	}
	if ok {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && ok:
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		out, err := cached.response(req)
		c.refresh(key, cached)
		if err == nil {
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used", "X-RateLimit-Reset"} {
				out.Header.Set(h, resp.Header.Get(h))
			}
		}
		return out, err
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		raw, err := httputil.DumpResponse(resp, true) // reads the body and puts an equal one back
		if err != nil {
			return nil, fmt.Errorf("reading GitHub's answer to %s: %w", req.URL.Path, err)
		}
		c.store(key, cachedResponse{etag: resp.Header.Get("ETag"), raw: raw, poll: isPoll(req.URL.Path), fresh: true})
	}
	return resp, nil
}

// stalePolls marks the copies a low budget may answer polls from as no
// longer fresh; their ETags stay, so that the next poll is still a free 304
// when the write changed nothing it lists.
func (c *conditional) stalePolls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.cache {
		if r.poll && r.fresh {
			r.fresh = false
			c.cache[k] = r
		}
	}
}

// refresh marks the copy under key fresh again: GitHub has just said it is
// current (a 304).
func (c *conditional) refresh(key string, r cachedResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.cache[key]; ok && cur.etag == r.etag {
		cur.fresh = true
		c.cache[key] = cur
	}
}

func (c *conditional) store(key string, r cachedResponse) {
	if len(r.raw) > maxCachedBody {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		c.cache = map[string]cachedResponse{}
	}
	if old, ok := c.cache[key]; ok {
		c.bytes -= len(old.raw)
	} else {
		c.order = append(c.order, key)
	}
	c.cache[key] = r
	c.bytes += len(r.raw)
	for len(c.order) > maxCached || c.bytes > maxCachedBytes {
		c.bytes -= len(c.cache[c.order[0]].raw)
		delete(c.cache, c.order[0])
		c.order = c.order[1:]
	}
}

// response rebuilds the kept 200 for req.
func (r cachedResponse) response(req *http.Request) (*http.Response, error) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(r.raw)), req)
	if err != nil {
		return nil, fmt.Errorf("replaying GitHub's answer to %s: %w", req.URL.Path, err)
	}
	return resp, nil
}

// Collectors returns the client's metrics, stagehand_github_requests_total{code} and the rate-limit
// gauges, for the daemon's registry.
func (c *Client) Collectors() []prometheus.Collector {
	return []prometheus.Collector{c.budget.requests, c.budget.remaining, c.budget.limit, c.budget.retries}
}

// isPoll reports whether path is what the daemon polls: the check runs of a commit, listed again each
// repropose period while a plan waits.
func isPoll(path string) bool {
	return strings.HasSuffix(path, "/check-runs") && strings.Contains(path, "/commits/")
}
