package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
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
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
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
	locks *lock.Handler
	limit *limiter // per bearer token; nil when unlimited
	// routes is every route the server serves; Handler mounts them.
	routes []route
}

// route is one row of the API: a ServeMux pattern, whether it needs the
// bearer token, and its handler.
type route struct {
	pattern string
	token   bool
	handler http.Handler
}

// New returns the API over b.
func New(b Backend, opts ...Option) (*Server, error) {
	if b == nil {
		return nil, errors.New("configuring API: nil backend")
	}
	o := options{metrics: prometheus.NewRegistry(), log: logr.Discard(), timeouts: DefaultTimeouts,
		ratePerSecond: DefaultRatePerSecond, rateBurst: DefaultRateBurst}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring API: %w", err)
		}
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("configuring API: %w", err)
	}
	s := &Server{b: b, o: o, limit: newLimiter(o.ratePerSecond, o.rateBurst)}
	if svc := b.LockService(); svc != nil && o.token != "" {
		h, err := lock.NewHandler(svc, o.token)
		if err != nil {
			return nil, fmt.Errorf("configuring API: %w", err)
		}
		s.locks = h
	}
	s.routes = s.table()
	return s, nil
}

// table lists the routes (see docs/api.md).
func (s *Server) table() []route {
	rs := []route{
		{"GET /healthz", false, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })},
		{"GET /readyz", false, http.HandlerFunc(s.readyz)},
		{"GET /metrics", false, promhttp.HandlerFor(s.o.metrics, promhttp.HandlerOpts{Registry: s.o.metrics})},
	}
	if s.o.webhook != nil {
		rs = append(rs, route{"POST /webhook/github", false, s.o.webhook})
	}
	rs = append(rs,
		route{"GET /api/v1/environments", true, http.HandlerFunc(s.listEnvironments)},
		route{"GET /api/v1/environments/{env}", true, http.HandlerFunc(s.getEnvironment)},
		route{"GET /api/v1/environments/{env}/layout", true, http.HandlerFunc(s.getLayout)},
		route{"GET /api/v1/environments/{env}/history", true, http.HandlerFunc(s.getHistory)},
		route{"GET /api/v1/environments/{env}/history/{id}", true, http.HandlerFunc(s.getHistoryEntry)},
		route{"GET /api/v1/services/{name}", true, http.HandlerFunc(s.getService)},
		route{"GET /api/v1/matrix", true, http.HandlerFunc(s.getMatrix)},
		route{"POST /api/v1/environments/{env}/approve", true, s.decisionHandler(true)},
		route{"POST /api/v1/environments/{env}/reject", true, s.decisionHandler(false)},
		route{"POST /api/v1/environments/{env}/rollback", true, http.HandlerFunc(s.rollback)},
		route{"POST /api/v1/environments/{env}/release", true, http.HandlerFunc(s.release)},
	)
	if s.locks != nil {
		for _, p := range s.locks.Routes() {
			rs = append(rs, route{p, true, s.locks})
		}
	}
	if s.o.ui != nil {
		// The web page's routes (docs/api.md, "The web page"): it signs people in itself.
		for _, p := range s.o.uiPatterns {
			rs = append(rs, route{p, false, s.o.ui})
		}
	}
	return rs
}

// Handler returns the API: the routes without a token on the server's mux,
// those with one under /api/, behind the bearer token check.
func (s *Server) Handler() http.Handler {
	mux, api := http.NewServeMux(), http.NewServeMux()
	for _, r := range s.routes {
		if r.token {
			api.Handle(r.pattern, r.handler)
		} else {
			mux.Handle(r.pattern, r.handler)
		}
	}
	mux.Handle("/api/", s.authenticate(api))
	return mux
}

// Serve serves the API on ln until ctx ends, then shuts down (letting
// requests in progress finish for up to five seconds).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.httpServer()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
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

// authenticate admits requests carrying the configured bearer token
// (compared in constant time) and answers 401 to everything else; a token
// over its rate limit gets 429 with Retry-After.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.o.token == "" {
			writeError(w, http.StatusServiceUnavailable, "the API is disabled: no token configured (server.apiTokenFile)")
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.o.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stagehand"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		if ok, wait := s.limit.allow(s.o.token); !ok {
			tooMany(w, wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	leading, err := s.b.Ready(r.Context())
	if err != nil {
		// The cause (Kubernetes' error text, names of namespaces) is for the operator's log, not for whoever probes.
		s.o.log.Error(err, "not ready")
		writeError(w, http.StatusServiceUnavailable, "not ready")
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

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client is gone if this fails
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
