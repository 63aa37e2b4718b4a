package ui

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

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

// Server is the web page over a Backend.
type Server struct {
	b     Backend
	o     options
	seal  *sealer
	limit *auth.Limiter // per login; nil when unlimited
	pages map[string]*template.Template
	hub   *hub
	mux   *http.ServeMux
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
	s := &Server{b: b, o: o, seal: seal, limit: auth.NewLimiter(o.ratePerSecond, o.rateBurst), pages: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(s.funcs()).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing page %s: %w", name, err)
		}
		s.pages[name] = t
	}
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
	mux.HandleFunc("GET /locks", s.locks)
	mux.HandleFunc("POST /locks", s.lockCreate)
	mux.HandleFunc("POST /locks/extend", s.lockExtend)
	mux.HandleFunc("POST /locks/unlock", s.lockUnlock)
	mux.HandleFunc("GET /events", s.events)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	mux.HandleFunc("GET /signin", s.signinPage)
	mux.HandleFunc("POST /signin/demo", s.signinDemo)
	mux.HandleFunc("GET /auth/github", s.oauthStart)
	mux.HandleFunc("GET /auth/callback", s.oauthCallback)
	mux.HandleFunc("POST /signout", s.signout)
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

// flashCookie is a __Host- cookie, as the others (see sessionCookie).
const flashCookie = "__Host-stagehand_flash"

// maxFlashValue bounds the sealed flash cookie's value: browsers keep
// cookies of up to 4096 bytes, name and attributes included, and silently
// drop larger ones, which would lose the message.
const maxFlashValue = 3800

// flashNext shows msg on the next page rendered. A message that would not
// fit a cookie (it quotes what the form sent) is shortened, ending in "…".
func (s *Server) flashNext(w http.ResponseWriter, r *http.Request, msg string, isErr bool) {
	for n := len(msg); ; n /= 2 {
		f := flash{Msg: clip(msg, n), Err: isErr}
		if v, err := s.seal.seal(flashCookie, f); err != nil || len(v) <= maxFlashValue || n == 0 {
			_ = s.setCookie(w, flashCookie, f, time.Minute)
			return
		}
	}
}

// clip returns s cut to at most n bytes on a rune boundary, with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// who returns r's viewer, or answers the sign-in page (401), a refusal
// (403) or, past the login's rate limit, 429, and returns nil.
func (s *Server) who(w http.ResponseWriter, r *http.Request) *viewer {
	se := s.session(r)
	if se == nil {
		next := "/"
		if r.Method == http.MethodGet && r.URL.Path != "/events" {
			next = r.URL.RequestURI()
		}
		s.render(w, r, http.StatusUnauthorized, "signin", page{Title: "Sign in", Next: next})
		return nil
	}
	if ok, wait := s.limit.Allow(se.Login, time.Now()); !ok {
		s.tooMany(w, r, se.Login, wait)
		return nil
	}
	acc, err := s.o.policy(r.Context(), se.Login, "")
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, fmt.Sprintf("Checking what %s may do failed: %v", se.Login, err))
		return nil
	}
	v := &viewer{Login: se.Login, CSRF: se.CSRF, Access: acc}
	if !acc.Read {
		s.render(w, r, http.StatusForbidden, "message", page{Title: "Not allowed", Viewer: v,
			Data: fmt.Sprintf("%s may not see Stagehand's environments: %s", se.Login, acc.Why)})
		return nil
	}
	return v
}

// mayPost checks a form post: a signed-in reader and the session's CSRF
// token. It answers and returns nil otherwise.
func (s *Server) mayPost(w http.ResponseWriter, r *http.Request) *viewer {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "Reading the form failed: "+err.Error())
		return nil
	}
	if !csrfOK(r, s.session(r)) {
		s.fail(w, r, http.StatusForbidden, "This form has expired or did not come from this page (CSRF token missing or wrong). Reload the page and try again.")
		return nil
	}
	return s.who(w, r)
}

// in returns v with its Access in env, or answers and returns nil when the
// policy cannot say.
func (s *Server) in(w http.ResponseWriter, r *http.Request, v *viewer, env string) *viewer {
	if env == "" {
		return v
	}
	acc, err := s.o.policy(r.Context(), v.Login, env)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, fmt.Sprintf("Checking what %s may do in %s failed: %v", v.Login, env, err))
		return nil
	}
	c := *v
	c.Access = acc
	return &c
}

// approves checks that v may approve and lock in env; it answers 403 and
// returns false otherwise.
func (s *Server) approves(w http.ResponseWriter, r *http.Request, v *viewer, env string) bool {
	if v = s.in(w, r, v, env); v == nil {
		return false
	}
	if !v.Access.Approve {
		where := ""
		if env != "" {
			where = " in " + env
		}
		s.fail(w, r, http.StatusForbidden, fmt.Sprintf("%s may read but not approve or lock%s: %s", v.Login, where, v.Access.Why))
		return false
	}
	return true
}

// maxForm caps the body of a form post.
const maxForm = 16 << 10

// render executes page name into w with status code.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Now = s.o.now()
	p.Signins = signins{GitHub: s.o.oauth != nil, Demo: s.demoFor(r)}
	if p.Flash == nil {
		if c, err := r.Cookie(flashCookie); err == nil {
			var f flash
			if s.seal.open(flashCookie, c.Value, &f) == nil {
				p.Flash = &f
			}
			clearCookie(w, flashCookie)
		}
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		http.Error(w, "rendering page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Add("Vary", "Accept-Encoding")
	if buf.Len() > 1400 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		// The overview of 500 services is 700 KB of repetitive HTML, about 30 KB gzipped.
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(code)
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write(buf.Bytes())
		_ = zw.Close()
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail answers a page saying msg.
// failErr shows err's page with the status the API's table gives it
// (WithErrorStatus).
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := s.o.statusOf(err)
	s.fail(w, r, status, err.Error())
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "message", page{Title: http.StatusText(code), Flash: &flash{Msg: msg, Err: true}})
}

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

// demoFor is the demo login offered to r: only to a loopback client.
func (s *Server) demoFor(r *http.Request) string {
	if s.o.demoLogin == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return ""
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		return "" // a proxy on this host forwards someone else
	}
	return s.o.demoLogin
}

// commitURL links a revision, or "" without WithCommitURL.
func (s *Server) commitURL(rev string) string {
	if s.o.commitURL == "" || rev == "" {
		return ""
	}
	return strings.ReplaceAll(s.o.commitURL, "{revision}", rev)
}
