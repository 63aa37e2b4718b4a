package httpserve_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
)

// TestRoutes: a request no route matches gets the JSON error body (404, or
// 405 with Allow when only the method is wrong); a matched route is served
// as the mux would.
func TestRoutes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("thing " + r.PathValue("id"))) })
	h := httpserve.Routes(mux)
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               httpserve.Error
		allow              string
	}{
		{name: "served", method: "GET", path: "/things/1", status: 200},
		{name: "unknown route", method: "GET", path: "/nothing", status: 404, body: httpserve.Error{Error: "no route /nothing", Code: httpserve.CodeNotFound}},
		{name: "wrong method", method: "DELETE", path: "/things/1", status: 405, allow: "GET, HEAD",
			body: httpserve.Error{Error: "DELETE /things/1: method not allowed; allowed: GET, HEAD", Code: httpserve.CodeMethodNotAllowed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
			if tc.status == 200 {
				if rec.Body.String() != "thing 1" {
					t.Errorf("body %q, want the route's", rec.Body)
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var got httpserve.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.body, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCodeOf: every status has a code, the named ones their own.
func TestCodeOf(t *testing.T) {
	for status, want := range map[int]string{400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
		405: "MethodNotAllowed", 409: "Conflict", 413: "TooLarge", 415: "UnsupportedMediaType", 429: "TooManyRequests",
		503: "Unavailable", 502: "Unavailable", 504: "Unavailable", 500: "Internal", 501: "Internal", 418: "BadRequest"} {
		if got := httpserve.CodeOf(status); got != want {
			t.Errorf("CodeOf(%d) = %q, want %q", status, got, want)
		}
	}
}

// TestServeShutsDownWithinGrace: when the context ends, Serve lets a
// request in progress run for the grace, then cuts it and returns nil.
func TestServeShutsDownWithinGrace(t *testing.T) {
	entered := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done() // a request that never finishes by itself
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	grace := 200 * time.Millisecond
	go func() { done <- httpserve.Serve(ctx, httpserve.New(h, httpserve.DefaultLimits), ln, grace) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String()); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil after the context ended", err)
		}
		if took := time.Since(stopped); took < grace {
			t.Errorf("returned %s after the stop, before the grace %s had passed for the request in progress", took, grace)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still runs 10s after its context ended with a grace of 200ms")
	}
}

// TestLimitsCheck: every limit must be set.
func TestLimitsCheck(t *testing.T) {
	if err := httpserve.DefaultLimits.Check(); err != nil {
		t.Errorf("DefaultLimits: %v", err)
	}
	l := httpserve.DefaultLimits
	l.MaxHeaderBytes = 0
	if err := l.Check(); err == nil {
		t.Error("maxHeaderBytes 0 was accepted")
	}
	l = httpserve.DefaultLimits
	l.IdleTimeout = 0
	if err := l.Check(); err == nil {
		t.Error("idle timeout 0 was accepted")
	}
}
