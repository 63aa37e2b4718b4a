package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Backend is what the page reads and decides through; the daemon
// implements it (it is the part of api.Backend the page needs).
type Backend interface {
	approval.Decider
	EnvironmentNames() []string
	Environment(ctx context.Context, env string) (*status.Environment, error)
	// LockService is the lock service; nil shows no locks.
	LockService() *lock.Service
}

//go:embed assets
var assets embed.FS

// pageNames are the templates under assets/, each rendered inside layout.html.
var pageNames = []string{"overview", "environment", "search", "locks", "signin", "message"}

// Server is the web page over a Backend: its routes and the pages that
// read the environments and decide on plans. Each other responsibility is a
// type of its own that it holds: the sealed cookies (cookies), the
// templates and error pages (renderer), who may see and post (guard),
// signing in (signin) and the locks page (lockPages).
type Server struct {
	b       Backend
	o       options
	cookies *cookies
	view    *renderer
	guard   *guard
	signin  *signin
	locks   *lockPages
	hub     *hub
	mux     *http.ServeMux
}

// New returns the page over b.
func New(b Backend, opts ...Option) (*Server, error) {
	if b == nil {
		return nil, errors.New("configuring web page: nil backend")
	}
	o := options{poll: time.Second, recheck: recheck, now: time.Now, loc: time.Local, ratePerSecond: DefaultRatePerSecond, rateBurst: DefaultRateBurst,
		policy: func(context.Context, string, string) (Access, error) {
			return Access{Read: true, Approve: true, Why: "no approver policy is configured"}, nil
		},
		statusOf: func(error) (int, string) { return http.StatusInternalServerError, "Internal" }}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring web page: %w", err)
		}
	}
	if o.dora == nil {
		r, err := dora.NewReporter(dora.WithClock(o.now))
		if err != nil {
			return nil, fmt.Errorf("configuring web page: %w", err)
		}
		o.dora = r
	}
	if o.sessionKey == nil {
		o.sessionKey = make([]byte, 32)
		_, _ = rand.Read(o.sessionKey)
	}
	seal, err := newSealer(o.sessionKey)
	if err != nil {
		return nil, fmt.Errorf("configuring web page: %w", err)
	}
	if o.demoLogin != "" && o.oauth != nil {
		return nil, errors.New("configuring web page: a demo login and GitHub sign-in exclude each other")
	}
	s := &Server{b: b, o: o}
	s.cookies = &cookies{seal: seal, now: o.now}
	if s.view, err = newRenderer(&s.o, s.cookies); err != nil {
		return nil, err
	}
	s.guard = &guard{o: &s.o, cookies: s.cookies, limit: auth.NewLimiter(o.ratePerSecond, o.rateBurst), view: s.view}
	s.signin = &signin{o: &s.o, cookies: s.cookies, view: s.view}
	s.locks = &lockPages{b: b, o: &s.o, guard: s.guard, view: s.view, order: s.order}
	s.hub = newHub(b, o.poll)
	s.mux = s.routes()
	return s, nil
}

// routes is every route of the page (see docs/reference/ui.md).
func (s *Server) routes() *http.ServeMux {
	static, _ := fs.Sub(assets, "assets/static")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /environments/{env}", s.environment)
	mux.HandleFunc("POST /environments/{env}/approve", s.decide(true))
	mux.HandleFunc("POST /environments/{env}/reject", s.decide(false))
	mux.HandleFunc("POST /environments/{env}/break-glass", s.breakGlass)
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /locks", s.locks.list)
	mux.HandleFunc("POST /locks", s.locks.create)
	mux.HandleFunc("POST /locks/extend", s.locks.extend)
	mux.HandleFunc("POST /locks/unlock", s.locks.unlock)
	mux.HandleFunc("GET /events", s.events)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	mux.HandleFunc("GET /signin", s.signin.page)
	mux.HandleFunc("POST /signin/demo", s.signin.demo)
	mux.HandleFunc("GET /auth/github", s.signin.start)
	mux.HandleFunc("GET /auth/callback", s.signin.callback)
	mux.HandleFunc("POST /signout", s.signin.signout)
	return mux
}

// Patterns are the routes the page serves, for the API's route table.
func Patterns() []string {
	return []string{"GET /{$}", "GET /environments/{env}", "POST /environments/{env}/approve", "POST /environments/{env}/reject",
		"POST /environments/{env}/break-glass", "GET /search", "GET /locks", "POST /locks", "POST /locks/extend", "POST /locks/unlock", "GET /events", "GET /static/",
		"GET /signin", "POST /signin/demo", "GET /auth/github", "GET /auth/callback", "POST /signout"}
}

// ServeHTTP serves the page, with headers that keep it from being framed
// or running script from elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	s.mux.ServeHTTP(w, r)
}

func staticHandler(static fs.FS) http.Handler {
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// viewer is who looks at a page and what they may do.
type viewer struct {
	Login  string
	CSRF   string
	Access Access
}

// Principal is the viewer as every rule sees them: the signed-in GitHub user, github:<login>.
func (v *viewer) Principal() identity.Principal {
	return identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: v.Login}}
}

// page is what every template gets.
type page struct {
	name    string // the template under assets/ (pageNames) it renders
	Title   string
	Nav     string // the nav entry to mark current
	Viewer  *viewer
	Flash   *flash
	Data    any
	Now     time.Time
	Signins signins
	// Next is where a sign-in from this page returns to.
	Next string
}

// signins says how one can sign in.
type signins struct {
	GitHub bool
	Demo   string
}

// flash is a one-time message after a form was sent.
type flash struct {
	Msg string `json:"m"`
	Err bool   `json:"e"`
}

// maxForm caps the body of a form post.
const maxForm = 16 << 10

// environments reads every environment, in stage order when known.
func (s *Server) environments(ctx context.Context) ([]*status.Environment, error) {
	var out []*status.Environment
	for _, name := range s.order(ctx) {
		e, err := s.b.Environment(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("reading environment %s: %w", name, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// order is the environments in pipeline stage order, then the others.
func (s *Server) order(ctx context.Context) []string {
	names := s.b.EnvironmentNames()
	if s.o.stages == nil {
		return names
	}
	return status.InStageOrder(names, s.o.stages(ctx))
}
