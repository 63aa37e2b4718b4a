package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Access is what one signed-in login may do on the page.
type Access struct {
	Read    bool
	Approve bool // approve and reject plans, take and remove locks
	// Why says what granted or refused it, shown to the person.
	Why string
}

// Policy decides a login's Access in env (for instance from the login's
// permission on the manifests repository and env's approvers rule); env
// "" asks about reading the page, and about locks on paths outside every
// environment's lock path.
type Policy func(ctx context.Context, login, env string) (Access, error)

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

	ratePerSecond float64
	rateBurst     int
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

// maxCachedAccess bounds CachedPolicy's memory: past it the cache starts over.
const maxCachedAccess = 4096

// CachedPolicy remembers p's answers for ttl per login and environment, so
// that a page view, its live updates and a form post do not each ask GitHub
// again. Errors are not remembered.
func CachedPolicy(p Policy, ttl time.Duration, now func() time.Time) Policy {
	type entry struct {
		acc     Access
		expires time.Time
	}
	var (
		mu    sync.Mutex
		cache = map[[2]string]entry{}
	)
	return func(ctx context.Context, login, env string) (Access, error) {
		key := [2]string{login, env}
		mu.Lock()
		e, ok := cache[key]
		mu.Unlock()
		if ok && now().Before(e.expires) {
			return e.acc, nil
		}
		acc, err := p(ctx, login, env)
		if err != nil {
			return Access{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		if len(cache) >= maxCachedAccess {
			clear(cache)
		}
		cache[key] = entry{acc: acc, expires: now().Add(ttl)}
		return acc, nil
	}
}
