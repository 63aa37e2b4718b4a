package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// Option configures New.
type Option func(*options) error

type options struct {
	token         string
	metrics       *prometheus.Registry
	webhook       *webhook.Receiver
	log           logr.Logger
	timeouts      Timeouts
	ratePerSecond float64
	rateBurst     int
	ui            http.Handler
	uiPatterns    []string
	rollback      Rollbacker
}

// WithLog receives what the API keeps from its callers: why /readyz
// answered 503. Without it, nothing is logged.
func WithLog(l logr.Logger) Option {
	return func(o *options) error { o.log = l; return nil }
}

// WithTimeouts sets the HTTP server's timeouts (default DefaultTimeouts);
// each must be positive.
func WithTimeouts(t Timeouts) Option {
	return func(o *options) error {
		if t.ReadHeader <= 0 || t.Read <= 0 || t.Write <= 0 || t.Idle <= 0 {
			return fmt.Errorf("server timeouts %+v: each must be positive", t)
		}
		o.timeouts = t
		return nil
	}
}

// WithRateLimit sets how many /api/ requests a second one bearer token may
// make, in bursts of up to burst (default DefaultRatePerSecond and
// DefaultRateBurst); a request over it gets 429 with Retry-After. A rate of
// 0 turns the limit off.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(o *options) error {
		if perSecond < 0 || (perSecond > 0 && burst < 1) {
			return fmt.Errorf("rate limit %v/s with burst %d: want a non-negative rate and a burst of at least 1", perSecond, burst)
		}
		o.ratePerSecond, o.rateBurst = perSecond, burst
		return nil
	}
}

// check judges the options together, once every Option has been applied.
func (o *options) check() error {
	if strings.ContainsFunc(o.token, unicode.IsSpace) {
		// A client sends one word; a token file of several lines or words would never match.
		return errors.New("the API token contains white space: want one line without spaces (server.apiTokenFile)")
	}
	return nil
}

// WithToken sets the bearer token every /api/ request must carry (the
// content of server.apiTokenFile). Without one, /api/ answers 503: the API
// is disabled.
func WithToken(token string) Option {
	return func(o *options) error { o.token = token; return nil }
}

// WithTokenFile reads the bearer token from path (server.apiTokenFile; ""
// leaves the API disabled, see WithToken).
func WithTokenFile(path string) Option {
	return func(o *options) error {
		if path == "" {
			return nil
		}
		t, err := config.ReadSecret(path)
		if err != nil {
			return fmt.Errorf("server.apiTokenFile: %w", err)
		}
		o.token = t
		return nil
	}
}

// WithMetrics serves reg at GET /metrics (without it, /metrics serves an
// empty registry).
func WithMetrics(reg *prometheus.Registry) Option {
	return func(o *options) error {
		if reg == nil {
			return errors.New("nil metrics registry")
		}
		o.metrics = reg
		return nil
	}
}

// WithWebhook serves r (which checks the HMAC signature of every delivery)
// at POST /webhook/github; without it (or with nil) the route does not exist.
func WithWebhook(r *webhook.Receiver) Option {
	return func(o *options) error { o.webhook = r; return nil }
}

// WithUI serves the web page h (internal/ui) on its patterns (ui.Patterns),
// on the server's own mux: the page signs people in itself, it takes no
// bearer token. Without it (or with nil) those paths answer 404.
func WithUI(h http.Handler, patterns ...string) Option {
	return func(o *options) error {
		for _, p := range patterns {
			if strings.HasPrefix(strings.TrimLeft(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ "), "/api/") {
				return fmt.Errorf("web page route %q: /api/ belongs to the API", p)
			}
		}
		o.ui, o.uiPatterns = h, patterns
		return nil
	}
}
