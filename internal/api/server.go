package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
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
type Server struct {
	b     Backend
	o     options
	locks *lockapi.Handler
	limit *auth.Limiter // per principal; nil when unlimited
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
	s := &Server{b: b, o: o, limit: auth.NewLimiter(o.ratePerSecond, o.rateBurst)}
	if svc := b.LockService(); svc != nil && o.auth.Enabled() {
		h, err := lockapi.NewHandler(svc, "", lockapi.WithCaller(s.lockCaller), lockapi.WithErrorWriter(fail))
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
		{"GET /readyz", publicRoute, http.HandlerFunc(s.readyz)},
		{"GET /metrics", publicRoute, promhttp.HandlerFor(s.o.metrics, promhttp.HandlerOpts{Registry: s.o.metrics})},
		{"GET /version", publicRoute, version.Handler(version.Get())},
	}
	if s.o.webhook != nil {
		rs = append(rs, route{"POST /webhook/github", publicRoute, s.o.webhook})
	}
	rs = append(rs,
		route{"GET /api/v1/environments", read, http.HandlerFunc(s.listEnvironments)},
		route{"GET /api/v1/environments/{env}", read, http.HandlerFunc(s.getEnvironment)},
		route{"GET /api/v1/environments/{env}/layout", read, http.HandlerFunc(s.getLayout)},
		route{"GET /api/v1/environments/{env}/history", read, http.HandlerFunc(s.getHistory)},
		route{"GET /api/v1/environments/{env}/history/{id}", read, http.HandlerFunc(s.getHistoryEntry)},
		route{"GET /api/v1/environments/{env}/dora", read, http.HandlerFunc(s.getDORA)},
		route{"GET /api/v1/services/{name}", read, http.HandlerFunc(s.getService)},
		route{"GET /api/v1/matrix", read, http.HandlerFunc(s.getMatrix)},
		route{"POST /api/v1/environments/{env}/approve", approveEnv, s.decisionHandler(true)},
		route{"POST /api/v1/environments/{env}/reject", approveEnv, s.decisionHandler(false)},
		route{"POST /api/v1/environments/{env}/rollback", approveEnv, http.HandlerFunc(s.rollback)},
		route{"POST /api/v1/environments/{env}/release", approveEnv, http.HandlerFunc(s.release)},
		route{"POST /api/v1/environments/{env}/break-glass", breakGlassEnv, http.HandlerFunc(s.breakGlass)},
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
			api.Handle(r.pattern, s.require(r.scope, r.handler))
		} else {
			mux.Handle(r.pattern, r.handler)
		}
	}
	mux.Handle("/api/", s.authenticate(httpserve.Routes(api)))
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

// authenticate puts the verified principal of the bearer token in the
// request's context and answers 401 (with the reason) to everything it
// cannot verify; a principal over its rate limit gets 429 with Retry-After.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.o.auth.Enabled() {
			fail(w, refuse(kindDisabled, "the API is disabled: no credentials configured (server.tokensFile, server.apiTokenFile, github or server.kubernetesAuth)"))
			return
		}
		p, err := s.o.auth.Authenticate(r.Context(), auth.BearerToken(r))
		if err != nil {
			if _, known := StatusOf(err); known == httpserve.CodeInternal {
				// Not a refusal of the credentials: the source failed to answer.
				s.o.log.Error(err, "verifying credentials")
				err = refuse(kindUnavailable, "verifying your credentials failed; try again later")
			}
			fail(w, err)
			return
		}
		if ok, wait := s.limit.Allow(string(p.Kind)+":"+p.Name, time.Now()); !ok {
			fail(w, &requestError{kind: kindTooMany, msg: "too many requests for this token; retry after the Retry-After seconds", wait: wait})
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// require answers 403, naming the scope and why, unless the request's
// principal has scope ("approve:{env}" is the environment of the path).
func (s *Server) require(scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tracing.SetRoute(r.Context(), r.Pattern) // the route of the API's own mux names the request's span
		want := strings.ReplaceAll(scope, "{env}", r.PathValue("env"))
		p, _ := auth.FromContext(r.Context())
		ok, why, err := s.o.auth.Authorize(r.Context(), p, want)
		if err != nil {
			s.o.log.Error(err, "authorizing", "principal", p.String(), "scope", want)
			fail(w, refuse(kindUnavailable, "checking whether %s may %s failed; try again later", p.Name, want))
			return
		}
		if !ok {
			fail(w, refuse(kindForbidden, "%s needs scope %s: %s", r.Method+" "+r.URL.Path, want, why))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// lockCaller is who takes or removes a lock: the verified principal, named
// by its typed identity (github:alice, token:ci-locker), an admin with
// lock:admin.
func (s *Server) lockCaller(r *http.Request) (lock.Caller, error) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		return lock.Caller{}, errors.New("no verified principal")
	}
	admin, _, err := s.o.auth.Authorize(r.Context(), p, auth.ScopeLockAdmin)
	if err != nil {
		return lock.Caller{}, err
	}
	return lock.Caller{Name: p.ID().String(), Admin: admin}, nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	leading, err := s.b.Ready(r.Context())
	if err != nil {
		// The cause (Kubernetes' error text, names of namespaces) is for the operator's log, not for whoever probes.
		s.o.log.Error(err, "not ready")
		fail(w, refuse(kindUnavailable, "not ready"))
		return
	}
	role := "standby"
	if leading {
		role = "leader"
	}
	if h, ok := s.b.(holder); ok {
		if envs := h.Held(); envs != nil {
			role = "holds " + strings.Join(envs, ", ")
		}
	}
	_, _ = fmt.Fprintf(w, "ok (%s)\n", role)
}

func writeJSON(w http.ResponseWriter, code int, v any) { httpserve.WriteJSON(w, code, v) }

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
