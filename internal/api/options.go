package api

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// Option configures New.
type Option func(*options) error

type options struct {
	token   string
	metrics *prometheus.Registry
	webhook *webhook.Receiver
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
