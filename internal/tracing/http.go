package tracing

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator reads and writes W3C trace context (traceparent, tracestate).
// It is a value of this package's, never the global propagator.
var propagator = propagation.TraceContext{}

// Extract returns ctx carrying the remote span context of h's traceparent
// (ctx as it is when h has none, or an invalid one).
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes ctx's span context into h as a traceparent (nothing when
// ctx carries none).
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Handler serves h with a server span per request, continuing the trace of
// the request's traceparent: the span is the child of the caller's, and
// everything h starts under the request's context is its child. The span
// is named by the method and the route h matched (an http.ServeMux's
// pattern), else the method alone, and records the status code; a 5xx marks
// it Error. When p is off, h is served as it is.
func (p *Provider) Handler(h http.Handler) http.Handler {
	if !p.Enabled() {
		return h
	}
	tracer := p.Tracer(scope)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(Extract(r.Context(), r.Header), r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		rh := &routeHolder{}
		r = r.WithContext(context.WithValue(ctx, routeKey{}, rh))
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		pattern := r.Pattern
		if rh.pattern != "" {
			pattern = rh.pattern
		}
		if i := strings.IndexByte(pattern, '/'); i >= 0 { // "[METHOD ][HOST]/PATH"
			route := pattern[i:]
			span.SetName(r.Method + " " + route)
			span.SetAttributes(attribute.String("http.route", route))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.code))
		}
	})
}

// routeKey keys the routeHolder of a request's context.
type routeKey struct{}

// routeHolder is the route an inner mux matched (SetRoute).
type routeHolder struct{ pattern string }

// SetRoute names the request of ctx by the route pattern an inner mux
// matched (the API's routes under /api/, where Handler sees only the outer
// mux's "/api/"). Nothing happens when ctx is not a traced request's.
func SetRoute(ctx context.Context, pattern string) {
	if rh, ok := ctx.Value(routeKey{}).(*routeHolder); ok && pattern != "" {
		rh.pattern = pattern
	}
}

// statusWriter remembers the status code written. Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines (the
// page's server-sent events).
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Flush flushes the response, for handlers that ask for an http.Flusher.
func (s *statusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
