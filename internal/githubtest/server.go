package githubtest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

//go:embed testdata/openapi-subset.json
var specJSON []byte

// loadRouter parses the OpenAPI description once per process (about three seconds: every $ref is already
// expanded) and shares the read-only router between servers.
var loadRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(specJSON)
	if err != nil {
		return nil, fmt.Errorf("loading OpenAPI description: %w", err)
	}
	doc.Servers = nil // match any host; the Enterprise prefix is stripped before routing
	router, err := legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
	if err != nil {
		return nil, fmt.Errorf("building router: %w", err)
	}
	return router, nil
})

// EnterprisePrefix is the path prefix of GitHub Enterprise Server's REST API; the server accepts requests
// with and without it, so go-github's WithEnterpriseURLs and a plain BaseURL both work.
const EnterprisePrefix = "/api/v3"

// Server is an in-process GitHub REST API. Create it with New; it stops at the end of the test.
type Server struct {
	tb       testing.TB
	http     *httptest.Server
	router   routers.Router
	appID    int64
	instID   int64
	appKey   *rsa.PrivateKey
	tokenTTL time.Duration
	static   string

	handlers map[string]handler // "METHOD /openapi/path" → implementation

	mu         sync.Mutex
	latency    time.Duration
	repos      map[string]*repo
	teams      map[string]map[string]string // "org/slug" → login → role
	tokens     map[string]time.Time         // installation token → expiry
	issued     int
	faults     []*Fault
	requests   []Request
	violations []string
	nextID     int64
	rateLimit  int               // the budget reported in X-RateLimit-Limit (ratelimit.go)
	rateUsed   int               // requests counted against it in the window
	rateReset  time.Time         // end of the window
	userTokens map[string]string // user token → login (user.go)
	device     deviceFlow        // the OAuth device flow (device.go)
	web        webFlow           // the OAuth web flow (webflow.go)
}

// Request is one request the server received, for assertions on what a client did.
type Request struct {
	Method string
	// Route is the OpenAPI path template, e.g. "/repos/{owner}/{repo}/check-runs"; empty when unknown.
	Route  string
	Path   string
	Status int
	// Fault is true when an injected fault answered the request.
	Fault bool
}

type options struct {
	tokenTTL time.Duration
	latency  time.Duration
	appID    int64
	instID   int64
}

// Option configures a Server.
type Option func(*options) error

// WithTokenTTL sets how long installation tokens live (default one hour). ghinstallation refreshes a token
// that expires within a minute, so a TTL under a minute makes every request fetch a fresh one.
func WithTokenTTL(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("WithTokenTTL(%s): want a positive lifetime", d)
		}
		o.tokenTTL = d
		return nil
	}
}

// WithLatency delays every response by d.
func WithLatency(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("WithLatency(%s): want zero or more", d)
		}
		o.latency = d
		return nil
	}
}

// WithApp sets the GitHub App id and its installation id (defaults 1001 and 2002).
func WithApp(appID, installationID int64) Option {
	return func(o *options) error {
		if appID <= 0 || installationID <= 0 {
			return fmt.Errorf("WithApp(%d, %d): want positive ids, as GitHub gives", appID, installationID)
		}
		o.appID, o.instID = appID, installationID
		return nil
	}
}

// newOptions applies opts to the defaults: tokens live an hour, App 1001 with installation 2002, no latency.
func newOptions(opts ...Option) (options, error) {
	o := options{tokenTTL: time.Hour, appID: 1001, instID: 2002}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// New starts a server that lives until the test ends. Every OpenAPI violation seen by the server fails tb
// at cleanup (see TakeViolations for tests that provoke one on purpose).
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	o, err := newOptions(opts...)
	if err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	router, err := loadRouter()
	if err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("githubtest: generating app key: %v", err)
	}
	s := &Server{
		tb: tb, router: router, appID: o.appID, instID: o.instID, appKey: key, tokenTTL: o.tokenTTL,
		static: "ghp_static_" + randomHex(16), latency: o.latency, rateLimit: DefaultRateLimit,
		repos: map[string]*repo{}, teams: map[string]map[string]string{}, tokens: map[string]time.Time{},
		nextID: 1000, userTokens: map[string]string{}, device: deviceFlow{codes: map[string]*deviceCode{}},
	}
	s.handlers = s.routes()
	maps.Copy(s.handlers, s.deploymentRoutes())
	s.http = httptest.NewServer(s)
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

// AppID and InstallationID identify the GitHub App whose installation tokens the server issues.
func (s *Server) AppID() int64          { return s.appID }
func (s *Server) InstallationID() int64 { return s.instID }

// AppPrivateKeyPEM is the app's RSA private key in PKCS#1 PEM, as GitHub lets you download it.
func (s *Server) AppPrivateKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.appKey)})
}

// TokensIssued counts the installation tokens handed out so far.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

// SetLatency changes the delay added to every response.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

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
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.violations
	s.violations = nil
	return v
}

func (s *Server) violation(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, a...))
}

// multiSegment matches paths whose last parameter may contain slashes (file paths, refs, branch names).
var multiSegment = []*regexp.Regexp{
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/contents/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/git/refs?/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/commits/)(.+?)(/check-runs|/status|/statuses|/pulls)?$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/branches/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/compare/)(.+)()$`),
}

const slashMark = "\x1f"

func routingPath(p string) string {
	for _, re := range multiSegment {
		if m := re.FindStringSubmatch(p); m != nil {
			return m[1] + strings.ReplaceAll(m[2], "/", slashMark) + m[3]
		}
	}
	return p
}

// ServeHTTP validates the request, applies faults and auth, runs the handler and validates its response.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "reading body", http.StatusBadRequest)
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}()
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}

	if strings.HasPrefix(r.URL.Path, "/login/") {
		// github.com's OAuth endpoints (the device flow): not part of the REST description.
		rec.Route = r.URL.Path
		rec.Status = s.serveLogin(w, r, body)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, EnterprisePrefix)
	rr := r.Clone(r.Context())
	rr.URL = &url.URL{Path: routingPath(p), RawQuery: r.URL.RawQuery}
	route, params, err := s.router.FindRoute(rr)
	if err != nil {
		s.violation("%s %s: no such operation in GitHub's API description (%v)", r.Method, r.URL.Path, err)
		rec.Status = http.StatusNotFound
		writeJSON(w, rec.Status, nil, map[string]any{"message": "Not Found"})
		return
	}
	rec.Route = route.Path
	for k, v := range params {
		params[k] = strings.ReplaceAll(v, slashMark, "/")
	}
	vbody := body
	if string(bytes.TrimSpace(body)) == "null" {
		// ghinstallation posts a JSON null when asking for a token without options; GitHub takes it as no body.
		vbody = nil
	}
	r.Body = io.NopCloser(bytes.NewReader(vbody))
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route, Options: validationOptions(false),
	}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		s.violation("%s %s: request rejected by GitHub's API description: %v", r.Method, r.URL.Path, err)
		rec.Status = http.StatusUnprocessableEntity
		writeJSON(w, rec.Status, nil, map[string]any{"message": "Validation Failed: " + err.Error()})
		return
	}
	if f := s.takeFault(r.Method, route.Path); f != nil && f.answers() {
		rec.Status, rec.Fault = f.Status, true
		f.write(w)
		return
	}

	c := &call{s: s, route: route, path: r.URL.Path, params: params, query: r.URL.Query(), body: body,
		token: bearer(r.Header.Get("Authorization"))}
	var res response
	if strings.HasPrefix(route.Path, "/app/") {
		res = s.handleApp(c, r.Header.Get("Authorization"))
	} else if !s.authorized(r.Header.Get("Authorization")) && !s.publicRead(r, params) {
		res = errorf(http.StatusUnauthorized, "Bad credentials")
	} else if h, ok := s.handlers[route.Method+" "+route.Path]; ok {
		s.mu.Lock()
		res = h(c)
		s.mu.Unlock()
	} else {
		// In GitHub's description but not emulated here (parts of the git
		// data API, say): the test that calls it fails, so new client
		// code cannot silently rely on an endpoint nobody checked.
		s.violation("%s %s: githubtest does not emulate %s %s; add a handler for it", r.Method, r.URL.Path, route.Method, route.Path)
		res = errorf(http.StatusNotImplemented, "githubtest: endpoint not emulated")
	}
	rec.Status = res.status
	out, err := s.complete(route, res)
	if err != nil {
		s.violation("%s %s: building response: %v", r.Method, r.URL.Path, err)
		rec.Status = http.StatusInternalServerError
		writeJSON(w, rec.Status, nil, map[string]any{"message": err.Error()})
		return
	}
	hdr := http.Header{}
	if out != nil {
		hdr.Set("Content-Type", "application/json; charset=utf-8")
	}
	for k, v := range res.header {
		hdr[k] = v
	}
	// Error bodies are not checked: GitHub's own error schemas are ambiguous (a basic error matches both
	// alternatives of the 409 oneOf, for example), so only successful bodies are validated.
	vin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.status, Header: hdr, Options: validationOptions(res.status >= 300),
	}
	vin.SetBodyBytes(out)
	if err := openapi3filter.ValidateResponse(r.Context(), vin); err != nil {
		s.violation("%s %s: githubtest's own response violates GitHub's API description: %v", r.Method, r.URL.Path, err)
		rec.Status = http.StatusInternalServerError
		writeJSON(w, rec.Status, nil, map[string]any{"message": "githubtest response invalid: " + err.Error()})
		return
	}
	if r.Method == http.MethodGet && res.status == http.StatusOK {
		// GitHub answers a GET with an ETag, and a matching If-None-Match with 304 and no body.
		sum := sha256.Sum256(out)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		hdr.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm == etag || inm == "W/"+etag {
			res.status, out, rec.Status = http.StatusNotModified, nil, http.StatusNotModified
			hdr.Del("Content-Type")
		}
	}
	s.rateLimitHeaders(hdr, route.Path, res.status)
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(res.status)
	_, _ = w.Write(out)
}

func validationOptions(skipBody bool) *openapi3filter.Options {
	o := &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, ExcludeResponseBody: skipBody,
	}
	o.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		return fmt.Sprintf("%s: %s (value %s)", "/"+strings.Join(err.JSONPointer(), "/"), err.Reason, short(err.Value))
	})
	return o
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func writeJSON(w http.ResponseWriter, status int, hdr http.Header, v any) {
	for k, vs := range hdr {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// call is one request as a handler sees it.
type call struct {
	s      *Server
	route  *routers.Route
	path   string // as requested, with any Enterprise prefix
	params map[string]string
	query  url.Values
	body   []byte
	token  string // the request's bearer token
}

func (c *call) decode(v any) error { return json.Unmarshal(c.body, v) }

// response is what a handler returns; body is marshalled to JSON and completed from the schema.
type response struct {
	status int
	body   any
	header http.Header
}

type handler func(c *call) response

func ok(status int, body any) response { return response{status: status, body: body} }

func errorf(status int, format string, a ...any) response {
	return response{status: status, body: map[string]any{
		"message":           fmt.Sprintf(format, a...),
		"documentation_url": "https://docs.github.com/rest",
	}}
}

// ValidToken reports whether tok is the static token or an unexpired installation token, e.g. for
// gitserver.WithCredentialCheck so a git clone authenticates with the App's token.
func (s *Server) ValidToken(tok string) bool { return s.authorized("token " + tok) }

func (s *Server) authorized(h string) bool {
	tok := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(h, "token "), "Bearer "))
	if tok == "" {
		return false
	}
	if tok == s.static {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.userTokens[tok]; ok {
		return true
	}
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// apiURL builds an absolute API URL for a path, as GitHub puts in "url" fields.
func (s *Server) apiURL(format string, a ...any) string {
	return s.URL() + fmt.Sprintf(format, a...)
}

func (s *Server) htmlURL(format string, a ...any) string {
	return s.http.URL + fmt.Sprintf(format, a...)
}
