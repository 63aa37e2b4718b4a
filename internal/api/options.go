package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// Option configures New.
type Option func(*options) error

type options struct {
	auth          *auth.Authenticator
	metrics       *prometheus.Registry
	webhook       *webhook.Receiver
	log           logr.Logger
	limits        httpserve.Limits
	shutdownGrace time.Duration
	ratePerSecond float64
	rateBurst     int
	ui            http.Handler
	uiPatterns    []string
	rollback      Rollbacker
	dora          *dora.Reporter
	stages        func(context.Context) []string
	promotions    func(context.Context) []status.Promotion
	tracing       *tracing.Provider
}

// WithLog receives what the API keeps from its callers: why /readyz
// answered 503. Without it, nothing is logged.
func WithLog(l logr.Logger) Option {
	return func(o *options) error { o.log = l; return nil }
}

// WithLimits sets the HTTP server's limits (default
// httpserve.DefaultLimits: server.http of reconciler.yaml); each must be
// positive.
func WithLimits(l httpserve.Limits) Option {
	return func(o *options) error {
		if err := l.Check(); err != nil {
			return err
		}
		o.limits = l
		return nil
	}
}

// WithShutdownGrace sets how long requests in progress may finish once
// serving stops (default httpserve.DefaultShutdownGrace); then their
// connections are closed.
func WithShutdownGrace(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("shutdown grace %s: want a positive duration", d)
		}
		o.shutdownGrace = d
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
	if o.auth == nil {
		a, err := auth.New() // verifies no one: /api/ answers 503
		if err != nil {
			return err
		}
		o.auth = a
	}
	return nil
}

// WithAuthenticator verifies the bearer token of every /api/ request and
// authorises each route's scope. Without one (or with one that verifies
// nothing), /api/ answers 503: the API is disabled.
func WithAuthenticator(a *auth.Authenticator) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("nil authenticator")
		}
		o.auth = a
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

// WithTracing traces every request with p (internal/tracing): a server
// span per request, continuing the caller's W3C traceparent, under which
// the webhook's handlers and a decision's apply run. Without it (or when p
// is off) nothing is traced.
func WithTracing(p *tracing.Provider) Option {
	return func(o *options) error { o.tracing = p; return nil }
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
