package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// backend is a hand-written Backend for the page's pure logic: two
// environments, prod with a pending plan. Cluster behaviour is tested in
// browser_test.go against the real daemon.
type backend struct {
	mu      sync.Mutex
	envs    map[string]*status.Environment
	locks   *lock.Service
	decided []string
}

var t0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

func newBackend(t testing.TB) *backend {
	t.Helper()
	svc, err := lock.New(lock.NewMemory(), lock.WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	change := reconcile.Change{Service: "checkout-api", Target: "eu", Namespace: "shop", Kind: "Deployment", Name: "checkout-api",
		Container: "app", From: "registry.example.com/checkout-api:1.4.1", To: "registry.example.com/checkout-api:1.4.2@sha256:" + strings.Repeat("ab", 32)}
	plan, _ := json.Marshal(reconcile.Plan{Environment: "prod", Revision: "c0ffee" + strings.Repeat("0", 34), PlanHash: "sha256:plan1", Changes: []reconcile.Change{change}})
	applied, _ := json.Marshal([]reconcile.Change{{Service: "checkout-api", Target: "eu", Kind: "Deployment", Name: "checkout-api", Container: "app",
		From: "registry.example.com/checkout-api:1.4.0", To: "registry.example.com/checkout-api:1.4.1"}})
	svcStatus := func(version, desired, live, state string) status.Service {
		return status.Service{Name: "checkout-api", Version: version, Source: "environments/prod/checkout-api.json",
			Targets: []status.ServiceTarget{{Target: "eu", Namespace: "shop", State: state,
				Images: []status.Image{{DockerName: "checkout-api", Desired: desired, Live: live}}}}}
	}
	return &backend{locks: svc, envs: map[string]*status.Environment{
		"staging": {Name: "staging", Phase: status.PhaseIdle, LockPath: "apps/staging", Observation: status.Observation{Revision: "beef", Services: []status.Service{
			svcStatus("1.4.2", "checkout-api:1.4.2", "checkout-api:1.4.2", status.StateInSync)}}},
		"prod": {Name: "prod", Phase: status.PhaseAwaitingApproval, LockPath: "apps/prod",
			Observation: status.Observation{Revision: "c0ffee" + strings.Repeat("0", 34), PlanHash: "sha256:plan1",
				Services: []status.Service{svcStatus("1.4.2", change.To, change.From, status.StateOutOfSync)},
				Layout: &manifest.Layout{File: "environments/prod/manifest.json", Includes: []*manifest.Layout{
					{File: "environments/prod/checkout-api.json", Services: []manifest.LayoutService{{Name: "checkout-api", Line: 3}}}}}},
			Pending: &approval.Pending{Revision: "c0ffee" + strings.Repeat("0", 34), PlanHash: "sha256:plan1", Plan: plan, ProposedAt: t0.Add(-time.Hour)},
			History: []approval.Entry{{Revision: "abc123", PlanHash: "sha256:old", Changes: applied, Approver: "carol",
				Result: approval.ResultSucceeded, Started: t0.Add(-48 * time.Hour), Finished: t0.Add(-48*time.Hour + 90*time.Second),
				BreakGlass: &approval.BreakGlass{PlanHash: "sha256:old", Revision: "abc123", By: "github:alice", Reason: "INC-42: <payments> down",
					At: t0.Add(-48 * time.Hour), Applied: t0.Add(-48 * time.Hour)}}}},
	}}
}

func (b *backend) EnvironmentNames() []string { return []string{"prod", "staging"} }

func (b *backend) Environment(_ context.Context, env string) (*status.Environment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.envs[env]
	if !ok {
		return nil, fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	c := *e
	return &c, nil
}

func (b *backend) set(env string, f func(e *status.Environment)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b.envs[env])
}

func (b *backend) decide(env, hash, what string) (*approval.Pending, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.envs[env]
	if !ok {
		return nil, fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	if e.Pending == nil || e.Pending.PlanHash != hash {
		return nil, &approval.NotPendingError{Environment: env, PlanHash: hash, Pending: e.Pending}
	}
	b.decided = append(b.decided, what)
	return e.Pending, nil
}

// Approve counts who's approval into the pending plan, as the daemon does
// for N-of-M approvals, and refuses "author" (four-eyes).
func (b *backend) Approve(_ context.Context, env, hash string, who identity.Principal) (*approval.Pending, error) {
	if who.ID.Equal(identity.ID{Kind: identity.GitHub, Name: "author"}) {
		return nil, &approval.RefusedError{Environment: env, Approver: who.String(), Reason: "author wrote c0ffee000000"}
	}
	p, err := b.decide(env, hash, "approve "+env+" by "+who.String())
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !p.ApprovedBy(who) {
		p.Approvals = append(p.Approvals, approval.NewApproval(who, t0))
	}
	c := *p
	return &c, nil
}

func (b *backend) Reject(_ context.Context, env, hash string, w approval.Why) (*approval.Pending, error) {
	who, why := w.By, w.Reason
	return b.decide(env, hash, "reject "+env+" by "+who.String()+": "+why)
}

func (b *backend) LockService() *lock.Service { return b.locks }

func (b *backend) decisions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.decided...)
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so each answer can be checked.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(req *http.Request) (int, http.Header, string) {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	code, _, body := b.do(req)
	return code, body
}

// post sends a form as a browser on this site would (with Origin).
func (b *browser) post(path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	_, body := b.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s:\n%s", path, body)
	}
	return m[1]
}

// serve starts the page over b on a loopback httptest server.
func serve(t *testing.T, b Backend, opts ...Option) string {
	t.Helper()
	opts = append([]Option{WithClock(func() time.Time { return t0 }, time.UTC)}, opts...)
	s, err := New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// signedIn is a browser signed in with the demo login.
func signedIn(t *testing.T, base string) *browser {
	t.Helper()
	br := newBrowser(t, base)
	if code, _, body := br.post("/signin/demo", nil); code != http.StatusSeeOther {
		t.Fatalf("demo sign-in: %d %s", code, body)
	}
	return br
}

// newRequest is a request as from a browser on this machine.
func newRequest(method, path string) *http.Request {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.Host = "127.0.0.1:8080"
	return req
}

func record(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
