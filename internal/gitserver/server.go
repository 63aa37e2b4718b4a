package gitserver

import (
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Counts is the number of requests the server answered, by kind.
type Counts struct {
	InfoRefs     int // GET info/refs?service=git-upload-pack: ls-remote, or the first step of a fetch
	UploadPack   int // POST git-upload-pack: a fetch or clone transferring objects
	ReceivePack  int // info/refs?service=git-receive-pack or POST git-receive-pack: push
	Other        int // anything else (dumb-protocol paths, unknown URLs)
	Unauthorized int // refused with 401
}

// Option configures a Server.
type Option func(*options) error

type options struct {
	user, password string
	bearer         string
	check          func(user, secret string) bool
	tls            bool
}

// WithTLS serves HTTPS with a certificate for 127.0.0.1 that no system
// trusts; CACert returns it for clients to trust.
func WithTLS() Option {
	return func(o *options) error {
		o.tls = true
		return nil
	}
}

// WithBasicAuth requires HTTP basic authentication with this user and password.
func WithBasicAuth(user, password string) Option {
	return func(o *options) error {
		if user == "" || password == "" {
			return fmt.Errorf("WithBasicAuth(%q, password of %d bytes): want a user and a password", user, len(password))
		}
		o.user, o.password = user, password
		return nil
	}
}

// WithBearer requires an `Authorization: Bearer <token>` header. Combined with
// WithBasicAuth, either credential is accepted.
func WithBearer(token string) Option {
	return func(o *options) error {
		if token == "" {
			return errors.New("WithBearer: empty token")
		}
		o.bearer = token
		return nil
	}
}

// WithCredentialCheck accepts a request when check approves its basic-auth
// user and password, or its bearer token (user ""). Use it for credentials
// that change, such as installation tokens minted by internal/githubtest.
// Combined with the other options, any accepted credential lets a request in.
func WithCredentialCheck(check func(user, secret string) bool) Option {
	return func(o *options) error {
		if check == nil {
			return errors.New("WithCredentialCheck: nil check")
		}
		o.check = check
		return nil
	}
}

// newOptions applies opts to the defaults (no TLS, no authentication).
func newOptions(opts ...Option) (options, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// Server is a git smart-HTTP server over loopback serving bare repositories
// from a temporary directory.
type Server struct {
	opts    options
	root    string // GIT_PROJECT_ROOT
	gitPath string
	logPath string

	mu     sync.Mutex
	counts Counts
	http   *httptest.Server
	cert   *x509.Certificate // of a WithTLS server
	addr   string
}

// New starts a server that is closed at test cleanup.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("gitserver: git CLI not found: %v", err)
	}
	s := &Server{gitPath: gitPath}
	if s.opts, err = newOptions(opts...); err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	dir := t.TempDir()
	s.root = filepath.Join(dir, "repos")
	s.logPath = filepath.Join(dir, "http-backend.log")
	if err := os.Mkdir(s.root, 0o755); err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	s.http = httptest.NewUnstartedServer(s)
	s.start(s.http)
	s.addr = s.http.Listener.Addr().String()
	if s.opts.tls {
		s.cert = s.http.Certificate()
	}
	t.Cleanup(func() {
		s.mu.Lock()
		h := s.http
		s.http = nil
		s.mu.Unlock()
		if h != nil {
			h.Close()
		}
	})
	return s
}

func (s *Server) start(h *httptest.Server) {
	if s.opts.tls {
		// A client that does not trust the certificate is what tests check
		// for; the server's log line about it is noise.
		h.Config.ErrorLog = log.New(io.Discard, "", 0)
		h.StartTLS()
		return
	}
	h.Start()
}

// URL is the server's base URL (http://127.0.0.1:port, https with WithTLS).
func (s *Server) URL() string {
	if s.opts.tls {
		return "https://" + s.addr
	}
	return "http://" + s.addr
}

// CACert is the PEM certificate of a WithTLS server (nil without TLS). It is
// the same across Stop and Start.
func (s *Server) CACert() []byte {
	if !s.opts.tls {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.cert.Raw})
}

// RepoURL is the clone URL of the named repository.
func (s *Server) RepoURL(name string) string { return s.URL() + "/" + name + ".git" }

// Path is the directory of the named bare repository.
func (s *Server) Path(name string) string { return filepath.Join(s.root, name+".git") }

// Requests returns the request counts since start or the last ResetRequests.
func (s *Server) Requests() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// ResetRequests sets every request count to zero.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = Counts{}
}

// Stop closes the listener: clients get "connection refused" until Start.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	h := s.http
	s.http = nil
	s.mu.Unlock()
	if h != nil {
		h.CloseClientConnections()
		h.Close()
	}
}

// Start listens again on the same address after Stop.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http != nil {
		return
	}
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatalf("gitserver: listening again on %s: %v", s.addr, err)
	}
	h := httptest.NewUnstartedServer(s)
	h.Listener.Close()
	h.Listener = l
	s.start(h)
	s.http = h
}

// ServeHTTP authenticates, counts and hands the request to git http-backend.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, ok := s.authenticate(r)
	if !ok {
		s.count(func(c *Counts) { c.Unauthorized++ })
		if s.opts.user != "" || s.opts.check != nil {
			w.Header().Add("WWW-Authenticate", `Basic realm="gitserver"`)
		}
		if s.opts.bearer != "" {
			w.Header().Add("WWW-Authenticate", `Bearer realm="gitserver"`)
		}
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	s.count(func(c *Counts) { classify(r, c) })
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer logf.Close()
	h := &cgi.Handler{
		Path: s.gitPath,
		Args: []string{"http-backend"},
		Dir:  s.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + user,
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.root,
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.receivepack",
			"GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=uploadpack.allowFilter",
			"GIT_CONFIG_VALUE_1=true",
		},
		InheritEnv: []string{"PATH"},
		Stderr:     logf,
	}
	h.ServeHTTP(w, r)
}

func classify(r *http.Request, c *Counts) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
		c.InfoRefs++
	case strings.HasSuffix(p, "/git-upload-pack"):
		c.UploadPack++
	case strings.HasSuffix(p, "/info/refs") && r.URL.Query().Get("service") == "git-receive-pack",
		strings.HasSuffix(p, "/git-receive-pack"):
		c.ReceivePack++
	default:
		c.Other++
	}
}

func (s *Server) count(f func(*Counts)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.counts)
}

// authenticate returns the user name to hand to git (REMOTE_USER) and whether
// the request may proceed.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	if s.opts.user == "" && s.opts.bearer == "" && s.opts.check == nil {
		return "anonymous", true
	}
	h := r.Header.Get("Authorization")
	if s.opts.check != nil {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && s.opts.check("", tok) {
			return "bearer", true
		}
		if u, p, ok := r.BasicAuth(); ok && s.opts.check(u, p) {
			return u, true
		}
	}
	if s.opts.bearer != "" {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && equal(tok, s.opts.bearer) {
			return "bearer", true
		}
	}
	if s.opts.user != "" {
		if enc, ok := strings.CutPrefix(h, "Basic "); ok {
			raw, err := base64.StdEncoding.DecodeString(enc)
			if err == nil {
				u, p, _ := strings.Cut(string(raw), ":")
				if equal(u, s.opts.user) && equal(p, s.opts.password) {
					return u, true
				}
			}
		}
	}
	return "", false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Init creates an empty bare repository whose HEAD names branch main and
// returns its clone URL.
func (s *Server) Init(t testing.TB, name string) string {
	t.Helper()
	dir := s.Path(name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	s.git(s.root).run(t, "init", "-q", "--bare", "--initial-branch=main", dir)
	return s.RepoURL(name)
}

// Git runs a git command inside the named bare repository with stdin as
// input and returns its trimmed standard output. It fails the test on error.
func (s *Server) Git(t testing.TB, name, stdin string, args ...string) string {
	t.Helper()
	c := s.git(s.Path(name))
	c.stdin = stdin
	return c.run(t, args...)
}

// git is a git command run in dir with the server's git binary.
func (s *Server) git(dir string) command { return command{bin: s.gitPath, dir: dir} }

// WriteFile writes content to dir/name with mode 0600 and returns the path:
// the token, CA bundle or key file a client of the server reads, as a
// mounted Secret would hold it.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatalf("gitserver: writing %s: %v", p, err)
	}
	return p
}
