package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/version"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// Backend is what the API serves: the daemon implements it. Every replica
// answers from the state Store, so any replica can serve any request.
type Backend interface {
	// Decider takes approvals and rejections (POST .../approve|reject).
	approval.Decider
	// EnvironmentNames lists the configured environments in order.
	EnvironmentNames() []string
	// Environment returns env as the API shows it, with its layout and
	// history; an error wrapping approval.ErrUnknownEnvironment for an
	// environment not in the configuration.
	Environment(ctx context.Context, env string) (*status.Environment, error)
	// History returns env's history, newest first, with the resolved
	// manifests; an error wrapping approval.ErrUnknownEnvironment for an
	// environment not in the configuration.
	History(ctx context.Context, env string) ([]approval.Entry, error)
	// HistoryEntry returns env's history entry numbered id, with its
	// resolved manifest; an error wrapping approval.ErrUnknownEnvironment or
	// approval.ErrUnknownEntry.
	HistoryEntry(ctx context.Context, env string, id int64) (*approval.Entry, error)
	// Ready reports whether this replica can serve (its state store answers)
	// and whether it leads.
	Ready(ctx context.Context) (leading bool, err error)
	// LockService is the lock service whose REST API is served under
	// /api/v1/locks and /api/v1/check/ (with the token); nil serves none.
	LockService() *lock.Service
}

// holder is a Backend whose replicas split the environments
// (leaderElection.perEnvironment): Held lists those this replica holds, nil
// when one leader works them all. /readyz names them.
type holder interface {
	Held() []string
}

// Server is the HTTP API over a Backend.
//
// The Server is the route table and how it is served; the routes' handlers
// over the Backend are its handlers, and who may call them (the bearer
// token verified, the rate per principal, each route's scope) its guard.
type Server struct {
	o     options
	h     *handlers
	guard *guard
	locks *lockapi.Handler
	// routes is every route the server serves; Handler mounts them.
	routes []route
}

// route is one row of the API: a ServeMux pattern, the scope it needs
// ("" for none: no credentials at all; "approve:{env}" takes the
// environment from the path), and its handler.
type route struct {
	pattern string
	scope   string
	handler http.Handler
}

// Scopes of the route table (see internal/auth).
const (
	read       = auth.ScopeRead
	lockScope  = auth.ScopeLock
	approveEnv = auth.ScopeApprove + "{env}"
	// breakGlassEnv is had through the environment's break-glass rule (internal/auth).
	breakGlassEnv = auth.ScopeBreakGlass + "{env}"
	publicRoute   = ""
)

// New returns the API over b.
func New(b Backend, opts ...Option) (*Server, error) {
	if b == nil {
		return nil, errors.New("configuring API: nil backend")
	}
	o := options{metrics: prometheus.NewRegistry(), log: logr.Discard(), limits: httpserve.DefaultLimits, shutdownGrace: httpserve.DefaultShutdownGrace,
		ratePerSecond: DefaultRatePerSecond, rateBurst: DefaultRateBurst}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring API: %w", err)
		}
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("configuring API: %w", err)
	}
	if o.dora == nil {
		r, err := dora.NewReporter()
		if err != nil {
			return nil, fmt.Errorf("configuring API: %w", err)
		}
		o.dora = r
	}
	s := &Server{o: o}
	s.h = &handlers{b: b, o: &s.o}
	s.guard = &guard{o: &s.o, limit: auth.NewLimiter(o.ratePerSecond, o.rateBurst)}
	if svc := b.LockService(); svc != nil && o.auth.Enabled() {
		h, err := lockapi.NewHandler(svc, "", lockapi.WithCaller(s.guard.lockCaller), lockapi.WithErrorWriter(fail))
		if err != nil {
			return nil, fmt.Errorf("configuring API: %w", err)
		}
		s.locks = h
	}
	s.routes = s.table()
	return s, nil
}

// table lists the routes (see docs/reference/api.md).
func (s *Server) table() []route {
	rs := []route{
		{"GET /healthz", publicRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })},
		{"GET /readyz", publicRoute, http.HandlerFunc(s.h.readyz)},
		{"GET /metrics", publicRoute, promhttp.HandlerFor(s.o.metrics, promhttp.HandlerOpts{Registry: s.o.metrics})},
		{"GET /version", publicRoute, version.Handler(version.Get())},
	}
	if s.o.webhook != nil {
		rs = append(rs, route{"POST /webhook/github", publicRoute, s.o.webhook})
	}
	rs = append(rs,
		route{"GET /api/v1/environments", read, http.HandlerFunc(s.h.listEnvironments)},
		route{"GET /api/v1/environments/{env}", read, http.HandlerFunc(s.h.getEnvironment)},
		route{"GET /api/v1/environments/{env}/layout", read, http.HandlerFunc(s.h.getLayout)},
		route{"GET /api/v1/environments/{env}/history", read, http.HandlerFunc(s.h.getHistory)},
		route{"GET /api/v1/environments/{env}/history/{id}", read, http.HandlerFunc(s.h.getHistoryEntry)},
		route{"GET /api/v1/environments/{env}/dora", read, http.HandlerFunc(s.h.getDORA)},
		route{"GET /api/v1/services/{name}", read, http.HandlerFunc(s.h.getService)},
		route{"GET /api/v1/matrix", read, http.HandlerFunc(s.h.getMatrix)},
		route{"POST /api/v1/environments/{env}/approve", approveEnv, s.h.decisionHandler(true)},
		route{"POST /api/v1/environments/{env}/reject", approveEnv, s.h.decisionHandler(false)},
		route{"POST /api/v1/environments/{env}/rollback", approveEnv, http.HandlerFunc(s.h.rollback)},
		route{"POST /api/v1/environments/{env}/release", approveEnv, http.HandlerFunc(s.h.release)},
		route{"POST /api/v1/environments/{env}/break-glass", breakGlassEnv, http.HandlerFunc(s.h.breakGlass)},
	)
	if s.locks != nil {
		for _, p := range s.locks.Routes() {
			scope := lockScope
			if strings.HasPrefix(p, "GET ") {
				scope = read
			}
			rs = append(rs, route{p, scope, s.locks})
		}
	}
	if s.o.ui != nil {
		// The web page's routes (docs/reference/api.md, "The web page"): it signs people in itself.
		for _, p := range s.o.uiPatterns {
			rs = append(rs, route{p, publicRoute, s.o.ui})
		}
	}
	return rs
}

// Handler returns the API: the public routes on the server's mux, the
// others under /api/, behind authentication and each route's scope. A path
// no route serves, or a method a route does not take, gets the error body
// (httpserve.Routes).
func (s *Server) Handler() http.Handler {
	mux, api := http.NewServeMux(), http.NewServeMux()
	for _, r := range s.routes {
		if r.scope != publicRoute {
			api.Handle(r.pattern, s.guard.require(r.scope, r.handler))
		} else {
			mux.Handle(r.pattern, r.handler)
		}
	}
	mux.Handle("/api/", s.guard.authenticate(httpserve.Routes(api)))
	return s.o.tracing.Handler(httpserve.Routes(mux))
}

// Serve serves the API on ln with its limits until ctx ends, then shuts
// down, letting requests in progress finish for up to the shutdown grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return httpserve.Serve(ctx, httpserve.New(s.Handler(), s.o.limits), ln, s.o.shutdownGrace)
}

// ServeWhile serves the API on ln while run (the daemon's Run) runs, and
// returns when both have ended: when ctx ends, or when serving fails, which
// ends run's context too.
func (s *Server) ServeWhile(ctx context.Context, ln net.Listener, run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() {
		err := s.Serve(ctx, ln)
		cancel()
		serveErr <- err
	}()
	err := run(ctx)
	cancel()
	return errors.Join(<-serveErr, err)
}
