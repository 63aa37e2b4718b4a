package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
)

// onTo returns a provider exporting to recv over HTTP, and a flush that
// returns the spans received.
func onTo(t *testing.T, recv *tracingtest.Receiver) (*Provider, func() []tracingtest.Span) {
	t.Helper()
	p, err := New(context.Background(), WithLookupEnv(envOf(nil)), WithEndpoint(recv.HTTPURL()),
		WithErrorHandler(func(err error) { t.Errorf("export: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	return p, func() []tracingtest.Span {
		t.Helper()
		if !flushed {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			flushed = true
		}
		return recv.Spans()
	}
}

// TestHandler: a request's traceparent is continued (the server span is
// its child, in its trace, and what the handler starts is the server
// span's child); the span is named by the route matched and records the
// status; a 5xx marks it Error; a request without a traceparent, or with
// a malformed one, starts a new trace.
func TestHandler(t *testing.T) {
	recv := tracingtest.Start(t)
	p, flush := onTo(t, recv)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhook/github", func(w http.ResponseWriter, r *http.Request) {
		_, span := p.Tracer("test").Start(r.Context(), "inner")
		span.End()
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /api/v1/environments/{env}", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	api := http.NewServeMux()
	api.HandleFunc("POST /api/v1/environments/{env}/approve", func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), r.Pattern)
	})
	mux.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), struct{}{}, 1))) // as authentication does
	}))
	srv := httptest.NewServer(p.Handler(mux))
	defer srv.Close()

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	send := func(method, path, traceparent string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(http.MethodPost, "/webhook/github", parent)
	send(http.MethodGet, "/api/v1/environments/prod", "00-zzzz-nonsense-01")
	send(http.MethodPost, "/api/v1/environments/prod/approve", "")
	spans := flush()

	type row struct {
		Name, Kind, Status, Route string
		Error, Continued          bool
	}
	var got []row
	byName := map[string]tracingtest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		if s.Kind == "server" {
			got = append(got, row{Name: s.Name, Kind: s.Kind, Status: s.Attributes["http.response.status_code"],
				Route: s.Attributes["http.route"], Error: s.Error,
				Continued: s.TraceID == "4bf92f3577b34da6a3ce929d0e0e4736" && s.ParentSpanID == "00f067aa0ba902b7"})
		}
	}
	want := []row{
		{Name: "POST /webhook/github", Kind: "server", Status: "202", Route: "/webhook/github", Continued: true},
		{Name: "GET /api/v1/environments/{env}", Kind: "server", Status: "503", Route: "/api/v1/environments/{env}", Error: true},
		{Name: "POST /api/v1/environments/{env}/approve", Kind: "server", Status: "200", Route: "/api/v1/environments/{env}/approve"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server spans (-want +got):\n%s", diff)
	}
	inner, server := byName["inner"], byName["POST /webhook/github"]
	if inner.TraceID != server.TraceID || inner.ParentSpanID != server.SpanID {
		t.Errorf("the handler's span is not the server span's child: %+v under %+v", inner, server)
	}
}

// TestHandlerFlushes: the middleware keeps a streaming handler's flushes
// (the page's server-sent events) reaching the client at once.
func TestHandlerFlushes(t *testing.T) {
	recv := tracingtest.Start(t)
	p, _ := onTo(t, recv)
	release := make(chan struct{})
	srv := httptest.NewServer(p.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		<-release
	})))
	defer srv.Close()
	defer close(release)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 9)
	if _, err := resp.Body.Read(buf); err != nil || string(buf) != "data: 1\n\n" {
		t.Fatalf("read %q, %v: the flush did not reach the client", buf, err)
	}
}
