package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/ui"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

const token = "api-test-token-0001"

// backend is a hand-written Backend: one environment, prod, with one pending plan.
type backend struct {
	pending *approval.Pending
	ready   error
	locks   *lock.Service
	decided []string
}

func (b *backend) EnvironmentNames() []string { return []string{"prod"} }

func (b *backend) Environment(_ context.Context, env string) (*status.Environment, error) {
	if env != "prod" {
		return nil, fmt.Errorf("%w %q; configured: [prod]", approval.ErrUnknownEnvironment, env)
	}
	return &status.Environment{Name: env, Pending: b.pending, Observation: status.Observation{Revision: "abc"},
		History: []approval.Entry{{Revision: "abc", Result: approval.ResultRejected}}}, nil
}

// history is prod's: entry 2 rejected, entry 1 succeeded, each with its manifest.
func (b *backend) History(_ context.Context, env string) ([]approval.Entry, error) {
	if env != "prod" {
		return nil, fmt.Errorf("%w %q; configured: [prod]", approval.ErrUnknownEnvironment, env)
	}
	m := func(tag string) *approval.Manifest {
		return &approval.Manifest{Root: "environments/prod/manifest.json", Services: []manifest.Service{{Name: "api",
			Source: "environments/prod/manifest.json", Containers: []manifest.Container{{DockerName: "api", DockerTag: tag}}}}}
	}
	return []approval.Entry{{ID: 2, Revision: "abc", Result: approval.ResultRejected, Manifest: m("1.1")},
		{ID: 1, Revision: "abb", Result: approval.ResultSucceeded, Manifest: m("1.0")}}, nil
}

func (b *backend) HistoryEntry(ctx context.Context, env string, id int64) (*approval.Entry, error) {
	h, err := b.History(ctx, env)
	if err != nil {
		return nil, err
	}
	return approval.FindEntry(h, env, id)
}

func (b *backend) decide(env, hash, what string) (*approval.Pending, error) {
	if env != "prod" {
		return nil, fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	if hash == "sha256:busy" {
		return nil, fmt.Errorf("handing the decision to the leader: 16 decisions wait for it already: %w", approval.ErrBusy)
	}
	if b.pending == nil || b.pending.PlanHash != hash {
		return nil, &approval.NotPendingError{Environment: env, PlanHash: hash, Pending: b.pending}
	}
	b.decided = append(b.decided, what)
	return b.pending, nil
}

func (b *backend) Approve(_ context.Context, env, hash string, who identity.Principal) (*approval.Pending, error) {
	return b.decide(env, hash, "approve "+who.String())
}

func (b *backend) Reject(_ context.Context, env, hash string, w approval.Why) (*approval.Pending, error) {
	who, why := w.By, w.Reason
	return b.decide(env, hash, "reject "+who.String()+" "+why)
}

func (b *backend) Ready(context.Context) (bool, error) { return true, b.ready }
func (b *backend) LockService() *lock.Service          { return b.locks }

func newServer(t *testing.T, b *backend, opts ...Option) *httptest.Server {
	t.Helper()
	s, err := New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDecisionBusyRetryAfter: a decision refused because too many wait for the leader says when to retry.
func TestDecisionBusyRetryAfter(t *testing.T) {
	srv := newServer(t, &backend{pending: &approval.Pending{PlanHash: "sha256:p"}}, withOps(t))
	req, err := http.NewRequest("POST", srv.URL+"/api/v1/environments/prod/approve", strings.NewReader(`{"planHash":"sha256:busy"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("approve with the queue full = %d, Retry-After %q; want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestRequests: status codes and bodies of the API over a hand-written backend.
func TestRequests(t *testing.T) {
	pending := &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p"}
	tests := []struct {
		name, method, path, token, body string
		noToken                         bool
		ready                           error
		wantCode                        int
		wantBody                        string // a substring
		wantDecided                     []string
	}{
		{name: "healthz", method: "GET", path: "/healthz", wantCode: 200, wantBody: "ok\n"},
		{name: "version without a token", method: "GET", path: "/version", wantCode: 200, wantBody: `"goVersion":"go1.`},
		{name: "ready leader", method: "GET", path: "/readyz", wantCode: 200, wantBody: "ok (leader)"},
		{name: "not ready", method: "GET", path: "/readyz", ready: errors.New("state not loaded yet"), wantCode: 503, wantBody: `"error": "not ready"`},
		{name: "no token configured", method: "GET", path: "/api/v1/environments", token: token, noToken: true, wantCode: 503, wantBody: "server.apiTokenFile"},
		{name: "no token sent", method: "GET", path: "/api/v1/environments", wantCode: 401, wantBody: "missing bearer token"},
		{name: "wrong token", method: "GET", path: "/api/v1/environments", token: "nope", wantCode: 401},
		{name: "unknown route", method: "GET", path: "/api/v1/nothing", token: token, wantCode: 404},
		{name: "list", method: "GET", path: "/api/v1/environments", token: token, wantCode: 200, wantBody: `"name": "prod"`},
		{name: "get", method: "GET", path: "/api/v1/environments/prod", token: token, wantCode: 200, wantBody: `"planHash": "sha256:p"`},
		{name: "get unknown", method: "GET", path: "/api/v1/environments/qa", token: token, wantCode: 404, wantBody: "unknown environment"},
		{name: "layout not resolved", method: "GET", path: "/api/v1/environments/prod/layout", token: token, wantCode: 404, wantBody: "not been resolved"},
		{name: "history", method: "GET", path: "/api/v1/environments/prod/history", token: token, wantCode: 200, wantBody: `"result": "rejected"`},
		{name: "history entry", method: "GET", path: "/api/v1/environments/prod/history/1", token: token, wantCode: 200,
			wantBody: `"dockerTag": "1.0"`},
		{name: "history entry unknown", method: "GET", path: "/api/v1/environments/prod/history/3", token: token, wantCode: 404,
			wantBody: "unknown history entry 3 in environment prod: it holds entries 1 to 2"},
		{name: "history entry bad id", method: "GET", path: "/api/v1/environments/prod/history/x1", token: token, wantCode: 400,
			wantBody: `history entry id \"x1\": want a positive integer`},
		{name: "history entry zero", method: "GET", path: "/api/v1/environments/prod/history/0", token: token, wantCode: 400},
		{name: "history entry unknown environment", method: "GET", path: "/api/v1/environments/qa/history/1", token: token, wantCode: 404,
			wantBody: "unknown environment"},
		{name: "history unknown environment", method: "GET", path: "/api/v1/environments/qa/history", token: token, wantCode: 404},
		{name: "approve", method: "POST", path: "/api/v1/environments/prod/approve", token: token, body: `{"planHash":"sha256:p"}`,
			wantCode: 202, wantBody: "approved by token:ops; applying revision abcdef012345 to prod", wantDecided: []string{"approve token:ops"}},
		{name: "reject", method: "POST", path: "/api/v1/environments/prod/reject", token: token, body: `{"planHash":"sha256:p","reason":"no"}`,
			wantCode: 200, wantBody: `"status": "rejected"`, wantDecided: []string{"reject token:ops no"}},
		{name: "stale hash", method: "POST", path: "/api/v1/environments/prod/approve", token: token, body: `{"planHash":"sha256:old"}`,
			wantCode: 409, wantBody: `"pending": {`},
		{name: "decisions queue full", method: "POST", path: "/api/v1/environments/prod/reject", token: token, body: `{"planHash":"sha256:busy"}`,
			wantCode: 503, wantBody: "16 decisions wait for it already"},
		{name: "unknown environment", method: "POST", path: "/api/v1/environments/qa/approve", token: token, body: `{"planHash":"sha256:p"}`, wantCode: 404},
		{name: "no plan hash", method: "POST", path: "/api/v1/environments/prod/approve", token: token, body: `{}`, wantCode: 400, wantBody: "planHash is required"},
		{name: "unknown field", method: "POST", path: "/api/v1/environments/prod/approve", token: token, body: `{"planHash":"sha256:p","as":"x"}`, wantCode: 400},
		{name: "GET on approve", method: "GET", path: "/api/v1/environments/prod/approve", token: token, wantCode: 405},
		{name: "no webhook configured", method: "POST", path: "/webhook/github", wantCode: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &backend{pending: pending, ready: tc.ready}
			var opts []Option
			if !tc.noToken {
				opts = append(opts, withOps(t))
			}
			srv := newServer(t, b, opts...)
			code, body := call(t, srv, tc.method, tc.path, tc.token, tc.body)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s %s = %d %s, want %d containing %q", tc.method, tc.path, code, body, tc.wantCode, tc.wantBody)
			}
			if diff := cmp.Diff(tc.wantDecided, b.decided); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLocksAndWebhookMounted: with a lock service and a token the lock API answers under /api/v1/locks;
// the webhook receiver answers at /webhook/github.
func TestLocksAndWebhookMounted(t *testing.T) {
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	recv, err := webhook.New("secret")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, &backend{locks: svc}, withOps(t), WithWebhook(recv))
	if code, body := call(t, srv, "GET", "/api/v1/locks", token, ""); code != 200 || !strings.Contains(body, `"locks"`) {
		t.Errorf("GET /api/v1/locks = %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/check/apps/prod?type=deploy", "", ""); code != 401 {
		t.Errorf("GET /api/v1/check without token = %d, want 401", code)
	}
	// The receiver answers (and refuses: nothing signs this), not the mux's 404.
	if code, body := call(t, srv, "POST", "/webhook/github", "", "{}"); code == http.StatusNotFound || code < 400 {
		t.Errorf("unsigned delivery = %d %s, want the receiver's refusal", code, body)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"nil authenticator", []Option{WithAuthenticator(nil)}, "nil authenticator"},
		{"nil metrics", []Option{WithMetrics(nil)}, "nil metrics registry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(&backend{}, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// heading is a documented endpoint in docs/reference/api.md: "### METHOD /path".
var heading = regexp.MustCompile("(?m)^### ([A-Z]+) (/\\S*)$")

// TestRoutesDocumented fails when the server registers a route that docs/reference/api.md does not document under a
// "### METHOD /path" heading, and when docs/reference/api.md documents a route the server does not have. A route
// without a method (the lock API mounted under a prefix) is documented by the headings beneath it.
func TestRoutesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference/api.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]bool{}
	sections := map[string]string{} // "METHOD /path" → the text beneath its heading
	idx := heading.FindAllStringSubmatchIndex(string(b), -1)
	for i, m := range idx {
		key := string(b[m[2]:m[3]]) + " " + string(b[m[4]:m[5]])
		docs[key] = false
		end := len(b)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		sections[key] = string(b[m[1]:end])
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	recv, err := webhook.New("secret")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(&backend{locks: svc}, withOps(t), WithWebhook(recv), WithUI(http.NotFoundHandler(), ui.Patterns()...))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.routes {
		method, path, ok := strings.Cut(r.pattern, " ")
		if !ok { // a mount prefix: some headings beneath it
			path, method = r.pattern, ""
		}
		path = strings.TrimSuffix(path, "{$}") // "GET /{$}" is documented as "GET /"
		found := false
		for d := range docs {
			dm, dp, _ := strings.Cut(d, " ")
			if (method != "" && dm == method && dp == path) ||
				(method == "" && (dp == path || (strings.HasSuffix(path, "/") && strings.HasPrefix(dp, path)))) {
				docs[d], found = true, true
			}
		}
		if !found {
			t.Errorf("route %q is served but not documented in docs/reference/api.md: add a \"### METHOD /path\" entry (auth, request, response, errors)", r.pattern)
		}
		if want := "Scope: `" + r.scope + "`"; found && r.scope != publicRoute && !strings.Contains(sections[r.pattern], want) {
			t.Errorf("docs/reference/api.md's entry of %q does not name the scope it needs: want %q", r.pattern, want)
		}
	}
	for d, served := range docs {
		if !served {
			t.Errorf("docs/reference/api.md documents %q, which the server does not serve", d)
		}
	}
}

// TestServeWhile: the server answers while run runs and both end with ctx.
func TestServeWhile(t *testing.T) {
	s, err := New(&backend{}, withOps(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	running := make(chan struct{})
	go func() {
		done <- s.ServeWhile(ctx, ln, func(ctx context.Context) error { close(running); <-ctx.Done(); return nil })
	}()
	<-running
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, []byte("ok\n")) {
		t.Errorf("healthz = %q", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeWhile = %v", err)
	}
}

// TestHistoryListLeavesOutManifests: the list is summaries; one entry has its manifest.
func TestHistoryListLeavesOutManifests(t *testing.T) {
	srv := newServer(t, &backend{}, withOps(t))
	code, body := call(t, srv, "GET", "/api/v1/environments/prod/history", token, "")
	if code != 200 || strings.Contains(body, `"manifest"`) || !strings.Contains(body, `"id": 2`) {
		t.Errorf("history list = %d %s; want ids and no manifests", code, body)
	}
	code, body = call(t, srv, "GET", "/api/v1/environments/prod/history/2", token, "")
	if code != 200 || !strings.Contains(body, `"manifest": {`) || !strings.Contains(body, `"id": 2`) {
		t.Errorf("history entry = %d %s; want entry 2 with its manifest", code, body)
	}
}
