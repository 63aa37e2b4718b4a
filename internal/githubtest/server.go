package githubtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest/app"
	"github.com/stagehand-gitops/stagehand/internal/githubtest/contract"
	"github.com/stagehand-gitops/stagehand/internal/githubtest/fault"
	"github.com/stagehand-gitops/stagehand/internal/githubtest/oauth"
)

// EnterprisePrefix is the path prefix of GitHub Enterprise Server's REST API; the server accepts requests
// with and without it, so go-github's WithEnterpriseURLs and a plain BaseURL both work.
const EnterprisePrefix = contract.EnterprisePrefix

// Fault makes the server answer matching requests with an error instead of handling them (Server.Faults).
type Fault = fault.Fault

// DefaultRateLimit is the hourly request budget the server reports unless a test sets GitHub's.
const DefaultRateLimit = fault.DefaultRateLimit

// Server is an in-process GitHub REST API. Create it with New; it stops at the end of the test. What it
// models is reached through small parts: Repo (one repository's contents, checks, pulls and deployments),
// Webhooks (deliveries built from that state), App (the GitHub App and its installation tokens), OAuth
// (github.com's login flows and user tokens) and Faults (injected errors, latency, the rate limit).
type Server struct {
	tb       testing.TB
	http     *httptest.Server
	static   string
	handlers map[string]handler // "METHOD /openapi/path" → implementation

	world  *world
	log    *journal
	app    *app.App
	faults *fault.Injector
	oauth  *oauth.Provider
}

// Request is one request the server received, for assertions on what a client did.
type Request struct {
	Method string
	// Route is the OpenAPI path template, e.g. "/repos/{owner}/{repo}/check-runs"; empty when unknown.
	Route string
	Path  string
	// Status is the status answered; 0 while the request is still being answered (a request is
	// recorded as it arrives, so a test that sees its effect also sees it counted).
	Status int
	// Fault is true when an injected fault answered the request.
	Fault bool
}

// New starts a server that lives until the test ends. Every OpenAPI violation seen by the server fails tb
// at cleanup (see TakeViolations for tests that provoke one on purpose).
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	o, err := newOptions(opts...)
	if err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	if err := contract.Load(); err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	a, err := app.New(o.appID, o.instID, o.tokenTTL)
	if err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	s := &Server{tb: tb, static: "ghp_static_" + randomHex(16), log: &journal{}, app: a, faults: fault.New(o.latency)}
	s.http = httptest.NewUnstartedServer(s)
	root := "http://" + s.http.Listener.Addr().String()
	s.oauth = oauth.New(root)
	s.world = &world{tb: tb, root: root, appID: o.appID, instID: o.instID, logins: s.oauth,
		repos: map[string]*repo{}, teams: map[string]map[string]string{}, nextID: 1000}
	s.handlers = routes(s.world)
	s.http.Start()
	tb.Cleanup(func() {
		s.http.Close()
		for _, v := range s.TakeViolations() {
			tb.Errorf("githubtest: GitHub API contract violation: %s", v)
		}
	})
	return s
}

// URL is the API base URL with the Enterprise prefix ("http://127.0.0.1:port/api/v3"): use it as
// github.apiURL, with go-github's WithEnterpriseURLs, and as ghinstallation's BaseURL.
func (s *Server) URL() string { return s.http.URL + EnterprisePrefix }

// RootURL is the API base URL without a prefix, like https://api.github.com.
func (s *Server) RootURL() string { return s.http.URL }

// Client is an HTTP client that reaches the server.
func (s *Server) Client() *http.Client { return s.http.Client() }

// Token is a static token (like a personal access token) that never expires.
func (s *Server) Token() string { return s.static }

// Repo is the repository owner/name (create it first with CreateRepo).
func (s *Server) Repo(owner, name string) Repo { return Repo{world: s.world, owner: owner, name: name} }

// Webhooks builds the deliveries GitHub sends about the repository owner/name.
func (s *Server) Webhooks(owner, name string) Webhooks {
	return Webhooks{world: s.world, owner: owner, name: name}
}

// App is the GitHub App whose installation tokens the server issues.
func (s *Server) App() *app.App { return s.app }

// OAuth is github.com's OAuth side: the device and web flows and the user tokens they hand out.
func (s *Server) OAuth() *oauth.Provider { return s.oauth }

// Faults injects errors, latency and a rate limit into the server's answers.
func (s *Server) Faults() *fault.Injector { return s.faults }

// Requests returns every request received so far.
func (s *Server) Requests() []Request { return s.log.all() }

// CountRequests counts requests with this method and OpenAPI route template.
func (s *Server) CountRequests(method, route string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && r.Route == route {
			n++
		}
	}
	return n
}

// TakeViolations returns and forgets the contract violations seen so far, so a test that sends an invalid
// request on purpose can assert on it without failing at cleanup.
func (s *Server) TakeViolations() []string {
	return append(s.log.take(), s.oauth.TakeViolations()...)
}

// ValidToken reports whether tok is the static token or an unexpired installation token, e.g. for
// gitserver.WithCredentialCheck so a git clone authenticates with the App's token.
func (s *Server) ValidToken(tok string) bool { return s.authorized("token " + tok) }

func (s *Server) authorized(h string) bool {
	tok := bearer(h)
	if tok == "" {
		return false
	}
	if tok == s.static {
		return true
	}
	if _, ok := s.oauth.Login(tok); ok {
		return true
	}
	return s.app.Valid(tok)
}

// bearer returns the token of an Authorization header ("token X" or "Bearer X").
func bearer(h string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(h, "token "), "Bearer "))
}

// ServeHTTP validates the request, applies faults and auth, runs the handler and validates its response.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "reading body", http.StatusBadRequest)
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path}
	i := s.log.open(rec)
	defer func() { s.log.set(i, rec) }()
	if latency := s.faults.Delay(); latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if strings.HasPrefix(r.URL.Path, "/login/") {
		// github.com's OAuth endpoints (the device and web flows): not part of the REST description.
		rec.Route = r.URL.Path
		rec.Status = s.oauth.ServeLogin(w, r, body)
		return
	}
	op, err := contract.Match(r)
	if err != nil {
		s.log.violation("%s %s: %v", r.Method, r.URL.Path, err)
		rec.Status = http.StatusNotFound
		writeJSON(w, rec.Status, map[string]any{"message": "Not Found"})
		return
	}
	rec.Route = op.Route.Path
	// Counted by route before the handler runs: its effect is visible as soon as the world's lock is let go.
	s.log.set(i, rec)
	if err := op.ValidateRequest(r, body); err != nil {
		s.log.violation("%s %s: request rejected by GitHub's API description: %v", r.Method, r.URL.Path, err)
		rec.Status = http.StatusUnprocessableEntity
		writeJSON(w, rec.Status, map[string]any{"message": "Validation Failed: " + err.Error()})
		return
	}
	if f := s.faults.Take(r.Method, op.Route.Path); f != nil && f.Answers() {
		rec.Status, rec.Fault = f.Status, true
		f.Write(w)
		return
	}
	c := &call{w: s.world, route: op.Route, path: r.URL.Path, params: op.Params, query: r.URL.Query(), body: body,
		token: bearer(r.Header.Get("Authorization"))}
	res := s.handle(c, r)
	rec.Status = s.answer(w, r, op, res)
}

// handle runs the operation's handler: the App's JWT for /app/, else a token (or a public repository's
// anonymous read) and the emulation of the operation.
func (s *Server) handle(c *call, r *http.Request) response {
	switch h, ok := s.handlers[c.route.Method+" "+c.route.Path]; {
	case strings.HasPrefix(c.route.Path, "/app/"):
		return s.exchange(c, r.Header.Get("Authorization"))
	case !s.authorized(r.Header.Get("Authorization")) && !s.world.publicRead(r, c.params):
		return errorf(http.StatusUnauthorized, "Bad credentials")
	case ok:
		s.world.mu.Lock()
		defer s.world.mu.Unlock()
		return h(c)
	default:
		// In GitHub's description but not emulated here (parts of the git
		// data API, say): the test that calls it fails, so new client
		// code cannot silently rely on an endpoint nobody checked.
		s.log.violation("%s %s: githubtest does not emulate %s %s; add a handler for it", r.Method, r.URL.Path, c.route.Method, c.route.Path)
		return errorf(http.StatusNotImplemented, "githubtest: endpoint not emulated")
	}
}

// exchange serves /app/... operations, which authenticate with the App's JWT: only the installation token
// exchange is emulated.
func (s *Server) exchange(c *call, authorization string) response {
	if err := s.app.Authenticate(authorization); err != nil {
		return errorf(http.StatusUnauthorized, "%s", err)
	}
	if c.route.Method+" "+c.route.Path != "POST /app/installations/{installation_id}/access_tokens" {
		// An App endpoint Stagehand does not call: the test that calls it fails.
		s.log.violation("%s %s: an App endpoint githubtest does not emulate (only the installation token exchange)", c.route.Method, c.route.Path)
		return errorf(http.StatusNotImplemented, "githubtest: endpoint not emulated")
	}
	status, body, err := s.app.Exchange(c.params["installation_id"])
	if err != nil {
		return errorf(status, "%s", err)
	}
	return ok(status, body)
}

// answer completes res from the operation's schema, validates it, adds GitHub's ETag (and answers a
// matching If-None-Match with 304) and rate-limit headers, writes it and returns the status sent.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, op *contract.Operation, res response) int {
	out, err := op.Complete(res.status, res.body)
	if err != nil {
		s.log.violation("%s %s: building response: %v", r.Method, r.URL.Path, err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": err.Error()})
		return http.StatusInternalServerError
	}
	hdr := http.Header{}
	if out != nil {
		hdr.Set("Content-Type", "application/json; charset=utf-8")
	}
	maps.Copy(hdr, res.header)
	if err := op.ValidateResponse(r.Context(), contract.Response{Status: res.status, Header: hdr, Body: out}); err != nil {
		s.log.violation("%s %s: githubtest's own response violates GitHub's API description: %v", r.Method, r.URL.Path, err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "githubtest response invalid: " + err.Error()})
		return http.StatusInternalServerError
	}
	status := res.status
	if r.Method == http.MethodGet && status == http.StatusOK {
		// GitHub answers a GET with an ETag, and a matching If-None-Match with 304 and no body.
		sum := sha256.Sum256(out)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		hdr.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm == etag || inm == "W/"+etag {
			status, out = http.StatusNotModified, nil
			hdr.Del("Content-Type")
		}
	}
	s.faults.RateLimitHeaders(hdr, op.Route.Path, status)
	maps.Copy(w.Header(), hdr)
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return status
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
