package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/httpserve/httpservetest"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// TestRateLimit: one token may make its burst of requests, then gets 429
// with Retry-After until its bucket refills; unauthenticated requests are
// not counted against it, and probes are never limited.
func TestRateLimit(t *testing.T) {
	srv := newServer(t, &backend{}, withOps(t), WithRateLimit(1, 3))
	for i := range 3 {
		if code, body := call(t, srv, "GET", "/api/v1/environments", token, ""); code != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, code, body)
		}
	}
	for range 5 {
		if code, _ := call(t, srv, "GET", "/api/v1/environments", "wrong", ""); code != 401 {
			t.Fatalf("a wrong token got %d, want 401", code)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/environments", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		string(body) != "{\n  \"error\": \"too many requests for this token; retry after the Retry-After seconds\",\n  \"code\": \"TooManyRequests\"\n}\n" {
		t.Errorf("over the limit: %d Retry-After %q %s, want 429 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if code, _ := call(t, srv, "GET", "/healthz", "", ""); code != 200 {
		t.Errorf("healthz over the limit: %d, want 200", code)
	}
	time.Sleep(1100 * time.Millisecond) // one token back in the bucket
	if code, body := call(t, srv, "GET", "/api/v1/environments", token, ""); code != 200 {
		t.Errorf("after a second: %d %s, want 200", code, body)
	}
	if _, err := New(&backend{}, WithRateLimit(1, 0)); err == nil {
		t.Error("a rate without a burst was accepted")
	}
	unlimited := newServer(t, &backend{}, withOps(t), WithRateLimit(0, 0))
	for range 200 {
		if code, _ := call(t, unlimited, "GET", "/api/v1/environments", token, ""); code != 200 {
			t.Fatalf("without a limit: %d", code)
		}
	}
}

// TestReadyzKeepsTheCause: /readyz says not ready without the cause, which
// goes to the log.
func TestReadyzKeepsTheCause(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	cause := errors.New(`configmaps is forbidden: User "system:serviceaccount:stagehand:reconciler" cannot list resource "configmaps" in namespace "stagehand"`)
	srv := newServer(t, &backend{ready: cause}, WithLog(log))
	code, body := call(t, srv, "GET", "/readyz", "", "")
	if code != 503 || body != "{\n  \"error\": \"not ready\",\n  \"code\": \"Unavailable\"\n}\n" {
		t.Errorf("readyz = %d %q, want 503 not ready", code, body)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "cannot list resource") {
		t.Errorf("logged %q, want the cause", logged)
	}
}

// TestServerTimeouts: a client that trickles its headers is cut off after
// the read-header timeout, and one that sends headers but not the body it
// announced after the read timeout; a normal request is still answered.
func TestServerTimeouts(t *testing.T) {
	short := httpserve.Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond, WriteTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 64 << 10}
	s, err := New(&backend{}, withOps(t), WithLimits(short))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	for _, tc := range []struct{ name, sent string }{
		{"headers never finished", "GET /healthz HTTP/1.1\r\nHost: x\r\n"},
		{"body never sent", "POST /api/v1/environments/prod/approve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 100\r\n\r\n{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.sent); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the server kept the connection %v", took)
			}
		})
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	if _, err := New(&backend{}, WithLimits(httpserve.Limits{ReadHeaderTimeout: time.Second})); err == nil {
		t.Error("zero timeouts were accepted")
	}
}

// TestDoorContract: the API answers an unknown route, a wrong method and a
// body over its cap with the JSON error body and code every door shares,
// 431 to headers over its limit, and cuts off a client that trickles its
// headers: httpservetest's checks, which prbot serve passes too.
func TestDoorContract(t *testing.T) {
	recv, err := webhook.New("secret")
	if err != nil {
		t.Fatal(err)
	}
	l := httpserve.DefaultLimits
	l.ReadHeaderTimeout = 300 * time.Millisecond
	s, err := New(&backend{}, withOps(t), WithWebhook(recv), WithLimits(l))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	httpservetest.Check(t, httpservetest.Door{Addr: ln.Addr().String(), ReadHeaderTimeout: l.ReadHeaderTimeout,
		TooLarge: "/webhook/github", MaxBody: webhook.DefaultMaxBodyBytes, Route: "/healthz",
		Headers: map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d1"}})
	// Under /api/ too, once authenticated: the route table's own mux.
	srv := newServer(t, &backend{}, withOps(t))
	if code, body := call(t, srv, "GET", "/api/v1/no-such-thing", token, ""); code != 404 || !strings.Contains(body, `"code": "NotFound"`) {
		t.Errorf("an unknown /api/ route = %d %s, want 404 with code NotFound", code, body)
	}
}
