package notify

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	client        *http.Client
	timeout       time.Duration
	attempts      int
	minBackoff    time.Duration
	maxBackoff    time.Duration
	maxRetryAfter time.Duration
	queueSize     int
	onError       func(sink string, err error)
	now           func() time.Time
	lockPaths     map[string]string // environment → lock path
}

// Option configures a Notifier.
type Option func(*options) error

// Defaults of the options.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultAttempts  = 6
	DefaultQueueSize = 100
)

func makeOptions(opts []Option) (options, error) {
	o := options{client: &http.Client{}, timeout: DefaultTimeout, attempts: DefaultAttempts, minBackoff: time.Second,
		maxBackoff: time.Minute, maxRetryAfter: 5 * time.Minute, queueSize: DefaultQueueSize,
		onError: func(string, error) {}, now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	if o.minBackoff > o.maxBackoff {
		return o, errors.New("configuring notifier: the first backoff is longer than the longest")
	}
	return o, nil
}

// WithClient sets the HTTP client (its transport: proxies, CAs). The
// client's own Timeout should be zero: WithTimeout bounds each request.
func WithClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("configuring notifier: nil HTTP client")
		}
		o.client = c
		return nil
	}
}

// WithTimeout bounds each request (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("configuring notifier: timeout must be positive")
		}
		o.timeout = d
		return nil
	}
}

// WithRetries sets how many attempts a message gets (default
// DefaultAttempts), the first backoff (doubled after every failure up to
// max) and the longest Retry-After honoured.
func WithRetries(attempts int, first, max, maxRetryAfter time.Duration) Option {
	return func(o *options) error {
		if attempts < 1 || first <= 0 || max <= 0 || maxRetryAfter <= 0 {
			return errors.New("configuring notifier: retries need at least one attempt and positive durations")
		}
		o.attempts, o.minBackoff, o.maxBackoff, o.maxRetryAfter = attempts, first, max, maxRetryAfter
		return nil
	}
}

// WithQueueSize sets how many messages wait per sink (default
// DefaultQueueSize); when full, the oldest is dropped and counted.
func WithQueueSize(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return errors.New("configuring notifier: queue size must be at least 1")
		}
		o.queueSize = n
		return nil
	}
}

// WithLockPaths names each environment's lock path, so that a lock event
// goes to the sinks of the environments it concerns (a lock at, under or
// above the path).
func WithLockPaths(paths map[string]string) Option {
	return func(o *options) error {
		o.lockPaths = maps.Clone(paths)
		return nil
	}
}

func sortedEnvs(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// OnError is called (from the sink's sender) for every message that could
// not be delivered or was dropped; the notifier itself logs nothing.
func OnError(f func(sink string, err error)) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("configuring notifier: nil error handler")
		}
		o.onError = f
		return nil
	}
}

// retryAfter parses a Retry-After value: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// drain reads a little of the body so the connection can be reused.
func drain(resp *http.Response) { _, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) }

// redact keeps a sink's URL (Slack's and Teams' carry their credential)
// out of an error.
func redact(err error, u string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New(strings.ReplaceAll(ue.Op+" "+redactedURL(u)+": "+ue.Err.Error(), u, redactedURL(u)))
	}
	return errors.New(strings.ReplaceAll(err.Error(), u, redactedURL(u)))
}

func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<sink URL>"
	}
	return p.Scheme + "://" + p.Host + "/…"
}
