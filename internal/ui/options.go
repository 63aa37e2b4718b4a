package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// Access is what one signed-in login may do on the page (read; approve and
// reject plans, take and remove locks), and why.
type Access = auth.Access

// Policy decides a login's Access in env (auth.AccessPolicy; cache it with
// auth.CachedAccess); env "" asks about reading the page, and about locks
// on paths outside every environment's lock path.
type Policy = auth.AccessPolicy

// OAuth is GitHub's OAuth web flow: the App's client, where GitHub's web
// pages are (authorize and access_token) and where its API is (GET /user).
type OAuth struct {
	ClientID, ClientSecret string
	// WebURL is https://github.com or a GitHub Enterprise Server's address.
	WebURL string
	// APIURL is https://api.github.com/ or the server's /api/v3/.
	APIURL string
	// Client makes the requests to GitHub (default http.DefaultClient).
	Client *http.Client
}

// Option configures New.
type Option func(*options) error

type options struct {
	policy     Policy
	demoLogin  string
	sessionKey []byte
	oauth      *OAuth
	commitURL  string // with {revision}
	poll       time.Duration
	recheck    time.Duration // how often an event stream asks the policy again
	now        func() time.Time
	loc        *time.Location
	stages     func(ctx context.Context) []string
	promotions func(ctx context.Context) []status.Promotion
	dora       *dora.Reporter
	statusOf   func(error) (int, string)
	breakGlass BreakGlassRule // breakglass.go; nil: not offered

	ratePerSecond float64
	rateBurst     int
}

// WithErrorStatus sets the status of an error the page meets (the API's
// one table, api.StatusOf, which internal/cli gives it): its page is shown
// with that status. Without it, every error is a 500.
func WithErrorStatus(statusOf func(error) (int, string)) Option {
	return func(o *options) error {
		if statusOf == nil {
			return errors.New("error status: nil")
		}
		o.statusOf = statusOf
		return nil
	}
}

// WithPolicy decides who may read and who may approve. Without it, every
// signed-in login may do both (for a demo login, or when sign-in itself is
// the gate).
func WithPolicy(p Policy) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("nil policy")
		}
		o.policy = p
		return nil
	}
}

// WithDemoLogin lets a visitor from a loopback address sign in as login
// without GitHub (server.ui.demoLogin).
func WithDemoLogin(login string) Option {
	return func(o *options) error { o.demoLogin = login; return nil }
}

// WithSessionKey sets the key that seals login cookies (at least 32 bytes);
// without it a random key is made, so sign-ins last as long as the process.
func WithSessionKey(key []byte) Option {
	return func(o *options) error { o.sessionKey = key; return nil }
}

// WithOAuth enables "Sign in with GitHub".
func WithOAuth(a OAuth) Option {
	return func(o *options) error {
		if a.ClientID == "" || a.ClientSecret == "" {
			return errors.New("oauth: client id and secret are required (server.ui.oauth)")
		}
		for name, v := range map[string]string{"web URL": a.WebURL, "API URL": a.APIURL} {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("oauth: %s %q is not an absolute http(s) URL", name, v)
			}
		}
		a.WebURL = strings.TrimSuffix(a.WebURL, "/")
		if !strings.HasSuffix(a.APIURL, "/") {
			a.APIURL += "/"
		}
		if a.Client == nil {
			a.Client = &http.Client{Timeout: 30 * time.Second}
		}
		o.oauth = &a
		return nil
	}
}

// WithCommitURL links revisions to their commit: tmpl with {revision}
// (e.g. https://github.com/acme/manifests/commit/{revision}).
func WithCommitURL(tmpl string) Option {
	return func(o *options) error {
		if !strings.Contains(tmpl, "{revision}") {
			return fmt.Errorf("commit URL %q has no {revision}", tmpl)
		}
		o.commitURL = tmpl
		return nil
	}
}

// WithStages orders the overview's columns by the promotion pipeline:
// stages returns the environments in stage order (from pipeline.yaml); the
// others follow in configuration order.
func WithStages(stages func(ctx context.Context) []string) Option {
	return func(o *options) error { o.stages = stages; return nil }
}

// WithPromotions shows, under the overview's matrix, what each promotion
// between adjacent stages waits for (internal/promotion).
func WithPromotions(p func(ctx context.Context) []status.Promotion) Option {
	return func(o *options) error { o.promotions = p; return nil }
}

// WithPollInterval sets how often the state is read for live updates while
// someone watches (default one second).
func WithPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("poll interval %v: want a positive duration", d)
		}
		o.poll = d
		return nil
	}
}

// WithClock sets the clock (tests) and the time zone times are shown in.
func WithClock(now func() time.Time, loc *time.Location) Option {
	return func(o *options) error {
		if now == nil || loc == nil {
			return errors.New("nil clock or location")
		}
		o.now, o.loc = now, loc
		return nil
	}
}
