package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestTarget: the endpoint and protocol come from the options, else the
// standard variables; tracing is off without an endpoint, with
// OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none; bad values are refused
// naming them.
func TestTarget(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		env     map[string]string
		want    target
		wantErr string
	}{
		{name: "nothing: off"},
		{name: "endpoint option over HTTP", opts: []Option{WithEndpoint("http://otel:4318")},
			want: target{endpoint: "http://otel:4318/v1/traces", protocol: ProtocolHTTP}},
		{name: "endpoint option with a path", opts: []Option{WithEndpoint("https://otel.example/otlp/")},
			want: target{endpoint: "https://otel.example/otlp/v1/traces", protocol: ProtocolHTTP}},
		{name: "endpoint option over gRPC", opts: []Option{WithEndpoint("http://otel:4317"), WithProtocol(ProtocolGRPC)},
			want: target{endpoint: "http://otel:4317", protocol: ProtocolGRPC}},
		{name: "base endpoint variable", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"},
			want: target{endpoint: "http://otel:4318/v1/traces", protocol: ProtocolHTTP}},
		{name: "traces endpoint variable used as it is", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel:4318/custom"},
			want: target{endpoint: "http://otel:4318/custom", protocol: ProtocolHTTP}},
		{name: "protocol variables, the traces one first", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			want: target{endpoint: "http://otel:4317", protocol: ProtocolGRPC}},
		{name: "the option over the variables", opts: []Option{WithEndpoint("http://mine:4318")},
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel:4318/v1/traces"},
			want: target{endpoint: "http://mine:4318/v1/traces", protocol: ProtocolHTTP}},
		{name: "SDK disabled", opts: []Option{WithEndpoint("http://otel:4318")}, env: map[string]string{"OTEL_SDK_DISABLED": "TRUE"}},
		{name: "exporter none", opts: []Option{WithEndpoint("http://otel:4318")}, env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "another exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER "zipkin": want otlp or none`},
		{name: "http/json", opts: []Option{WithEndpoint("http://otel:4318"), WithProtocol("http/json")},
			wantErr: `protocol "http/json": want http/protobuf or grpc`},
		{name: "no scheme", opts: []Option{WithEndpoint("otel:4317")}, wantErr: `endpoint "otel:4317/v1/traces": want an http:// or https:// URL`},
		{name: "credentials in the URL are refused and not repeated", opts: []Option{WithEndpoint("https://user:secret@otel")},
			wantErr: `endpoint "https://user:xxxxx@otel/v1/traces": credentials go in OTEL_EXPORTER_OTLP_HEADERS`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options{lookupEnv: envOf(tc.env)}
			for _, opt := range tc.opts {
				if err := opt(&o); err != nil {
					t.Fatal(err)
				}
			}
			got, err := o.target()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q repeats the credential", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(target{})); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOffByDefault: without an endpoint New returns a provider that records
// nothing, its door middleware is the handler itself, and Shutdown has
// nothing to flush.
func TestOffByDefault(t *testing.T) {
	p, err := New(context.Background(), WithLookupEnv(envOf(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled() {
		t.Fatal("tracing is on without an endpoint")
	}
	_, span := p.Tracer("x").Start(context.Background(), "s")
	if span.IsRecording() {
		t.Error("a span of the off provider records")
	}
	h := &httptest.Server{} // any comparable handler would do: it is never served
	if got := p.Handler(handlerValue{h}); got != (handlerValue{h}) {
		t.Error("the off provider wraps handlers")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestExport: spans reach a collector over OTLP/HTTP and over OTLP/gRPC,
// with the service's name, and Shutdown flushes what is queued.
func TestExport(t *testing.T) {
	recv := tracingtest.Start(t)
	for _, tc := range []struct{ protocol, endpoint string }{
		{ProtocolHTTP, recv.HTTPURL()}, {ProtocolGRPC, recv.GRPCURL()},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			var exportErrs []error
			p, err := New(context.Background(), WithLookupEnv(envOf(nil)), WithEndpoint(tc.endpoint), WithProtocol(tc.protocol),
				WithServiceName("stagehand-test"), WithErrorHandler(func(err error) { exportErrs = append(exportErrs, err) }))
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.Tracer("x").Start(context.Background(), "span over "+tc.protocol)
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil { // the batch is not due for 5s: only the flush sends it now
				t.Fatal(err)
			}
			spans := recv.Spans()
			var got []string
			for _, s := range spans {
				if s.Name == "span over "+tc.protocol {
					got = append(got, s.Via+" "+s.Service)
				}
			}
			want := map[string]string{ProtocolHTTP: "http", ProtocolGRPC: "grpc"}[tc.protocol] + " stagehand-test"
			if diff := cmp.Diff([]string{want}, got); diff != "" {
				t.Errorf("spans received (-want +got):\n%s", diff)
			}
			if len(exportErrs) > 0 {
				t.Errorf("export errors: %v", exportErrs)
			}
		})
	}
}

// TestExportFailure: a collector that refuses is reported to the error
// handler (not OpenTelemetry's global one) and stops nothing.
func TestExportFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusBadRequest) // not retryable
	}))
	defer srv.Close()
	errs := make(chan error, 10)
	p, err := New(context.Background(), WithLookupEnv(envOf(nil)), WithEndpoint(srv.URL),
		WithErrorHandler(func(err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer("x").Start(context.Background(), "s")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "exporting 1 spans") {
			t.Errorf("export error %q does not say what was lost", err)
		}
	default:
		t.Fatal("the refused export was not reported")
	}
}

type handlerValue struct{ s *httptest.Server }

func (handlerValue) ServeHTTP(http.ResponseWriter, *http.Request) {}

func TestOptionsRefused(t *testing.T) {
	for name, opt := range map[string]Option{
		"ratio over 1": WithSampleRatio(1.5), "negative ratio": WithSampleRatio(-0.1),
		"nil lookup": WithLookupEnv(nil), "nil error handler": WithErrorHandler(nil),
	} {
		if _, err := New(context.Background(), opt); err == nil || !strings.Contains(err.Error(), "configuring tracing") {
			t.Errorf("%s: New accepted it (%v)", name, err)
		}
	}
}
