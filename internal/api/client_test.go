package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// newClient is a Client of srv with tok.
func newClient(t *testing.T, srv *httptest.Server, tok string, opts ...ClientOption) *Client {
	t.Helper()
	c, err := NewClient(srv.URL, tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiError is err's *Error, failing the test without one.
func apiError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T): want an *api.Error", err, err)
	}
	return e
}

// The Client calls every route the CLI uses on the real server, and decodes
// each answer into the server's own types.
func TestClientRoutes(t *testing.T) {
	ctx := context.Background()
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	pending := &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p", Plan: json.RawMessage(`{"changes":[]}`)}
	b := &backend{pending: pending, locks: svc}
	rb := &rollbacks{}
	srv := newServer(t, b, withOps(t), WithRollback(rb))
	c := newClient(t, srv, token)

	envs, err := c.Environments(ctx)
	if err != nil || len(envs) != 1 || envs[0].Name != "prod" || envs[0].History != nil {
		t.Errorf("Environments = %+v, %v; want prod without its history", envs, err)
	}
	env, err := c.Environment(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if p := env.Pending; p == nil || p.PlanHash != pending.PlanHash || p.Revision != pending.Revision || !json.Valid(p.Plan) {
		t.Errorf("Environment(prod).Pending = %+v, want %+v", p, pending)
	}
	h, err := c.History(ctx, "prod")
	if err != nil || len(h) != 2 || h[0].ID != 2 || h[0].Manifest != nil {
		t.Errorf("History = %+v, %v; want entries 2 and 1 without manifests", h, err)
	}
	e, err := c.HistoryEntry(ctx, "prod", 1)
	if err != nil || e.ID != 1 || e.Manifest == nil || e.Manifest.Services[0].Containers[0].DockerTag != "1.0" {
		t.Errorf("HistoryEntry(1) = %+v, %v; want entry 1 with its manifest", e, err)
	}
	m, err := c.Matrix(ctx)
	if err != nil || len(m.Environments) != 1 || m.Environments[0].Name != "prod" {
		t.Errorf("Matrix = %+v, %v", m, err)
	}
	d, err := c.Approve(ctx, "prod", DecisionRequest{PlanHash: "sha256:p"})
	if err != nil || d.Status != "approved" || d.PlanHash != "sha256:p" {
		t.Errorf("Approve = %+v, %v", d, err)
	}
	d, err = c.Reject(ctx, "prod", DecisionRequest{PlanHash: "sha256:p", Reason: "not now"})
	if err != nil || d.Status != "rejected" {
		t.Errorf("Reject = %+v, %v", d, err)
	}
	if diff := cmp.Diff([]string{"approve token:ops", "reject token:ops not now"}, b.decided); diff != "" {
		t.Errorf("decided (-want +got):\n%s", diff)
	}
	r, err := c.Rollback(ctx, "prod", RollbackRequest{To: "previous", Reason: "broken"})
	if err != nil || r.PR != 7 || r.Action != "opened" {
		t.Errorf("Rollback = %+v, %v", r, err)
	}
	rel, err := c.Release(ctx, "prod", ReleaseRequest{Reason: "fixed"})
	if err != nil || !strings.Contains(rel.Message, "released by ops") {
		t.Errorf("Release = %+v, %v", rel, err)
	}
	locks, err := c.Locks()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Lock(ctx, lockapi.LockRequest{Lock: lock.Lock{Path: "apps/prod", Type: lock.Deploy}, Duration: "1h"}); err != nil {
		t.Fatal(err)
	}
	ls, err := locks.List(ctx, "")
	if err != nil || len(ls) != 1 || ls[0].Author != "token:ops" {
		t.Errorf("Locks().List = %+v, %v; want the lock by token:ops", ls, err)
	}
}

// Every refusal is an *Error with the HTTP status and the server's message;
// a decision on another plan carries the plan pending instead.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	pending := &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p"}
	srv := newServer(t, &backend{pending: pending}, withOps(t), WithRollback(&rollbacks{}))
	tests := []struct {
		name       string
		token      string
		call       func(*Client) error
		wantStatus int
		wantMsg    string
		wantCode   string
	}{
		{"unknown environment", token, func(c *Client) error { _, err := c.Environment(ctx, "qa"); return err }, 404, `unknown environment "qa"`, CodeUnknownEnvironment},
		{"unknown history entry", token, func(c *Client) error { _, err := c.HistoryEntry(ctx, "prod", 9); return err }, 404, "unknown history entry 9", CodeUnknownHistoryEntry},
		{"a token the server does not know", "not-a-known-token-00001", func(c *Client) error { _, err := c.Matrix(ctx); return err }, 401, "", "Unauthorized"},
		{"a reader approves", viewerToken, func(c *Client) error {
			_, err := c.Approve(ctx, "prod", DecisionRequest{PlanHash: "sha256:p"})
			return err
		}, 403, "needs scope approve:prod", "Forbidden"},
		{"another plan", token, func(c *Client) error {
			_, err := c.Approve(ctx, "prod", DecisionRequest{PlanHash: "sha256:old"})
			return err
		}, 409, "sha256:old", CodeNotPending},
		{"an unknown rollback target", token, func(c *Client) error {
			_, err := c.Rollback(ctx, "prod", RollbackRequest{To: "999", Reason: "x"})
			return err
		}, 404, "unknown history entry 999", CodeUnknownRollbackTarget},
		{"nothing to release", token, func(c *Client) error { _, err := c.Release(ctx, "prod", ReleaseRequest{}); return err }, 404, "no hold to release", CodeLockNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := apiError(t, tt.call(newClient(t, srv, tt.token)))
			if e.Status != tt.wantStatus || !strings.Contains(e.Message, tt.wantMsg) || e.Code != tt.wantCode {
				t.Errorf("error %d %q code %q, want %d saying %q, code %q", e.Status, e.Message, e.Code, tt.wantStatus, tt.wantMsg, tt.wantCode)
			}
			if tt.wantStatus == 409 && (e.Pending == nil || e.Pending.PlanHash != "sha256:p") {
				t.Errorf("409 pending = %+v, want the plan pending now", e.Pending)
			}
		})
	}
}

// An answer longer than the cap is an error, not a truncated record: from
// the real server (a history past a small cap) and from one that never
// stops talking; a malformed answer is a decoding error naming the route,
// and an error page that is not JSON keeps its text, bounded.
func TestClientHugeAndMalformedAnswers(t *testing.T) {
	ctx := context.Background()
	real := newServer(t, &backend{}, withOps(t))
	if _, err := newClient(t, real, token, WithMaxResponse(64)).History(ctx, "prod"); err == nil || !strings.Contains(err.Error(), "longer than 64 bytes") {
		t.Errorf("history past a 64-byte cap: %v", err)
	}
	if _, err := newClient(t, real, token, WithMaxResponse(64<<10)).History(ctx, "prod"); err != nil {
		t.Errorf("history within the cap: %v", err)
	}

	served := make(chan int64, 1)
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n, _ := io.Copy(w, io.LimitReader(zeros{}, 1<<30))
		served <- n
	}))
	t.Cleanup(endless.Close)
	_, err := newClient(t, endless, token).Matrix(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("longer than %d bytes", DefaultMaxResponse)) {
		t.Errorf("an endless answer: %v", err)
	}
	if n := <-served; n >= 1<<30 {
		t.Errorf("the client read all %d bytes of the endless answer", n)
	}

	bodies := []struct {
		name, body string
		code       int
		want       string
	}{
		{"not JSON", "<html>oops</html>", 200, "decoding the answer to GET /api/v1/environments/prod/history"},
		{"the wrong shape", `{"history": 5}`, 200, "decoding the answer to GET /api/v1/environments/prod/history"},
		{"an error page", "<html>" + strings.Repeat("bad gateway ", 200) + "</html>", 502, "502 Bad Gateway: <html>bad gateway"},
	}
	for _, tt := range bodies {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			_, err := newClient(t, srv, token).History(ctx, "prod")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("History = %v, want an error saying %q", err, tt.want)
			}
			if len(err.Error()) > 700 {
				t.Errorf("error of %d bytes: the body is not bounded", len(err.Error()))
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// The token goes to the server named only: a redirect is not followed (Go's
// client would keep Authorization to the same host on another port), and
// environment names cannot climb out of their path.
func TestClientKeepsTheToken(t *testing.T) {
	ctx := context.Background()
	got := make(chan string, 1)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(elsewhere.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	_, err := newClient(t, redirect, token).Approve(ctx, "prod", DecisionRequest{PlanHash: "sha256:p"})
	if e := apiError(t, err); e.Status != http.StatusTemporaryRedirect || !strings.Contains(e.Message, "not followed") {
		t.Errorf("redirect: %v", err)
	}
	select {
	case a := <-got:
		t.Errorf("the redirect was followed, with Authorization %q", a)
	default:
	}
	real := newServer(t, &backend{}, withOps(t))
	c := newClient(t, real, token)
	for _, env := range []string{"", ".", ".."} {
		if _, err := c.Environment(ctx, env); err == nil || !strings.Contains(err.Error(), "want an environment name") {
			t.Errorf("Environment(%q) = %v", env, err)
		}
	}
	// A name with a slash stays one path segment: an unknown environment, not another route.
	if _, err := c.Environment(ctx, "prod/history"); apiError(t, err).Status != http.StatusNotFound {
		t.Errorf("Environment(prod/history) = %v, want 404", err)
	}
	for _, tt := range []struct{ server, token string }{{"ftp://x", token}, {"http://", token}, {"http://u:p@host", token}, {real.URL, " "}} {
		if _, err := NewClient(tt.server, tt.token); err == nil {
			t.Errorf("NewClient(%q, %q) accepted", tt.server, tt.token)
		}
	}
	if _, err := NewClient(real.URL, token, WithClientTimeout(0)); err == nil {
		t.Error("a zero timeout was accepted")
	}
}

// A server that answers too slowly is given up after the client's timeout.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	start := time.Now()
	_, err := newClient(t, slow, token, WithClientTimeout(100*time.Millisecond)).Matrix(context.Background())
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("a silent server: %v after %s", err, time.Since(start))
	}
}
