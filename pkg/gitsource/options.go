package gitsource

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Option configures a Source.
type Option func(*options) error

type options struct {
	cacheDir     string
	githubAPIURL string
	transport    http.RoundTripper
	jitter       float64
	backoffMin   time.Duration
	backoffMax   time.Duration
	debounce     time.Duration
	timeout      time.Duration
	maxPacks     int
}

func defaultOptions() options {
	return options{
		jitter:     0.1,
		backoffMin: 5 * time.Second,
		backoffMax: 5 * time.Minute,
		debounce:   100 * time.Millisecond,
		timeout:    2 * time.Minute,
		maxPacks:   256,
	}
}

// WithCacheDir sets the directory that holds the persistent bare-repository
// cache (one subdirectory per URL and branch). It overrides source.cacheDir;
// without either, the user cache directory (…/stagehand/git) is used.
func WithCacheDir(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("cache directory must not be empty")
		}
		o.cacheDir = dir
		return nil
	}
}

// WithGitHubAPIURL sets the GitHub API base URL used to mint GitHub App
// installation tokens (GitHub Enterprise, or a test server).
func WithGitHubAPIURL(u string) Option {
	return func(o *options) error { o.githubAPIURL = u; return nil }
}

// WithTransport sets the HTTP transport used to talk to the GitHub API for
// installation tokens.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *options) error { o.transport = rt; return nil }
}

// WithJitter adds up to fraction×interval of random delay to each interval
// poll (default 0.1). Ignored for cron schedules.
func WithJitter(fraction float64) Option {
	return func(o *options) error {
		if fraction < 0 || fraction > 1 {
			return fmt.Errorf("jitter %v: want a fraction between 0 and 1", fraction)
		}
		o.jitter = fraction
		return nil
	}
}

// WithBackoff sets the first retry delay after a failed poll and its cap; the
// delay doubles with each consecutive failure (defaults 5s and 5m).
func WithBackoff(first, max time.Duration) Option {
	return func(o *options) error {
		if first <= 0 || max < first {
			return fmt.Errorf("backoff %s..%s: want 0 < first <= max", first, max)
		}
		o.backoffMin, o.backoffMax = first, max
		return nil
	}
}

// WithDebounce sets how long Run waits after a Trigger for more triggers
// before polling, so a burst of webhooks makes one fetch (default 100ms).
func WithDebounce(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("debounce %s: must not be negative", d)
		}
		o.debounce = d
		return nil
	}
}

// WithTimeout bounds each poll (ls-remote plus fetch; default 2m).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("timeout %s: must be positive", d)
		}
		o.timeout = d
		return nil
	}
}

func defaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory (set source.cacheDir): %w", err)
	}
	return filepath.Join(d, "stagehand", "git"), nil
}
