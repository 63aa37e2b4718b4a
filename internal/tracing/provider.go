package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The OTLP protocols a Provider exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// attributeValueLimit caps the length of one attribute's value: a door
// records a request's path, which a caller chooses.
const attributeValueLimit = 1024

// Option configures a Provider.
type Option func(*options) error

type options struct {
	endpoint    string
	protocol    string
	sampleRatio *float64
	serviceName string
	version     string
	lookupEnv   func(string) (string, bool)
	onError     func(error)
	exporter    sdktrace.SpanExporter
}

// WithEndpoint is where spans are sent: the collector's base URL (http://
// or https://, the scheme saying whether TLS is used), as
// OTEL_EXPORTER_OTLP_ENDPOINT takes it: over HTTP the path /v1/traces is
// added to it. Empty: the variables say (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// then OTEL_EXPORTER_OTLP_ENDPOINT); with none of them tracing is off.
func WithEndpoint(u string) Option {
	return func(o *options) error { o.endpoint = u; return nil }
}

// WithProtocol is the OTLP protocol: ProtocolHTTP or ProtocolGRPC. Empty:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL,
// then ProtocolHTTP.
func WithProtocol(p string) Option {
	return func(o *options) error { o.protocol = p; return nil }
}

// WithSampleRatio traces that share of new traces (0 to 1); a trace
// continued from a caller's traceparent follows the caller's decision.
// Unset: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, else every trace.
func WithSampleRatio(r float64) Option {
	return func(o *options) error {
		if r < 0 || r > 1 || r != r {
			return fmt.Errorf("sample ratio %v: want 0 to 1", r)
		}
		o.sampleRatio = &r
		return nil
	}
}

// WithServiceName names the process in its spans (service.name), where
// OTEL_SERVICE_NAME does not.
func WithServiceName(name string) Option {
	return func(o *options) error { o.serviceName = name; return nil }
}

// WithVersion is the build's version (service.version).
func WithVersion(v string) Option {
	return func(o *options) error { o.version = v; return nil }
}

// WithLookupEnv is where the OTEL_* variables that turn tracing on and pick
// the endpoint and protocol are read (default os.LookupEnv). The exporters
// read their own (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _CERTIFICATE,
// _COMPRESSION) from the process's environment.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("lookup env: nil function")
		}
		o.lookupEnv = f
		return nil
	}
}

// WithErrorHandler is called with every export that failed (for the binary
// to log; the library never logs, and OpenTelemetry's global error handler
// never hears of them).
func WithErrorHandler(f func(error)) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("error handler: nil function")
		}
		o.onError = f
		return nil
	}
}

// WithExporter exports to e instead of OTLP (tests); tracing is then on
// whatever the endpoint and variables say.
func WithExporter(e sdktrace.SpanExporter) Option {
	return func(o *options) error { o.exporter = e; return nil }
}

// Provider is a process's tracer provider: the SDK's exporting over OTLP,
// or, when tracing is off, one that records nothing.
type Provider struct {
	sdk *sdktrace.TracerProvider // nil: off
	tp  trace.TracerProvider

	deploysOnce sync.Once
	deploys     *Deploys
}

// Off is a Provider that records nothing.
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// New returns the process's Provider: off (Off) when no endpoint is
// configured, OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none;
// else exporting over OTLP to the endpoint in batches, in the background.
// Nothing is sent before the first span ends, so an unreachable collector
// does not stop the process: its exports fail (WithErrorHandler) and their
// spans are dropped.
func New(ctx context.Context, opts ...Option) (*Provider, error) {
	o := options{lookupEnv: os.LookupEnv, serviceName: "stagehand", onError: func(error) {}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring tracing: %w", err)
		}
	}
	exp := o.exporter
	if exp == nil {
		target, err := o.target()
		if err != nil || target.endpoint == "" {
			return Off(), err
		}
		if exp, err = target.exporter(ctx); err != nil {
			return nil, err
		}
	}
	exp = reporting{SpanExporter: exp, onError: o.onError}
	res, err := o.resource(ctx)
	if err != nil {
		return nil, err
	}
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = attributeValueLimit
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(limits)}
	if r := o.sampleRatio; r != nil {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	sdk := sdktrace.NewTracerProvider(tpOpts...)
	return &Provider{sdk: sdk, tp: sdk}, nil
}

// Enabled says whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// TracerProvider is p as OpenTelemetry's interface (a no-op one when off).
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Tracer is the tracer of the instrumentation scope name.
func (p *Provider) Tracer(name string) trace.Tracer { return p.TracerProvider().Tracer(name) }

// Shutdown exports the spans still queued and stops p, within ctx's
// deadline (the stop's grace): what is not sent by then is dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}

// target is where and how spans are sent.
type target struct {
	endpoint string // a URL; "": off
	protocol string
}

// target resolves the endpoint and protocol from the options and the
// variables, or says tracing is off (an empty endpoint).
func (o *options) target() (target, error) {
	env := func(k string) string { v, _ := o.lookupEnv(k); return strings.TrimSpace(v) }
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return target{}, nil
	}
	switch e := env("OTEL_TRACES_EXPORTER"); e {
	case "", "otlp":
	case "none":
		return target{}, nil
	default:
		return target{}, fmt.Errorf("configuring tracing: OTEL_TRACES_EXPORTER %q: want otlp or none", e)
	}
	t := target{protocol: o.protocol}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if t.protocol == "" {
			t.protocol = env(k)
		}
	}
	if t.protocol == "" {
		t.protocol = ProtocolHTTP
	}
	if t.protocol != ProtocolHTTP && t.protocol != ProtocolGRPC {
		return target{}, fmt.Errorf("configuring tracing: protocol %q: want %s or %s", t.protocol, ProtocolHTTP, ProtocolGRPC)
	}
	base, full := o.endpoint, ""
	if base == "" {
		full, base = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), env("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch {
	case full != "":
		t.endpoint = full // the signal's own URL, used as it is
	case base != "":
		t.endpoint = base
		if t.protocol == ProtocolHTTP {
			t.endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	default:
		return target{}, nil
	}
	u, err := url.Parse(t.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return target{}, fmt.Errorf("configuring tracing: endpoint %q: want an http:// or https:// URL of the collector", redact(t.endpoint))
	}
	if u.User != nil {
		return target{}, fmt.Errorf("configuring tracing: endpoint %q: credentials go in OTEL_EXPORTER_OTLP_HEADERS, not the URL", redact(t.endpoint))
	}
	return t, nil
}

// exporter is the OTLP exporter of t. It connects lazily: nothing is sent
// before the first batch.
func (t target) exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if t.protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(t.endpoint))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(t.endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("configuring tracing: OTLP exporter to %s: %w", redact(t.endpoint), err)
	}
	return exp, nil
}

// resource says which process the spans come from: service.name and
// service.version, overridden by OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
func (o *options) resource(ctx context.Context) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", o.serviceName)}
	if o.version != "" {
		attrs = append(attrs, attribute.String("service.version", o.version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("configuring tracing: resource: %w", err)
	}
	return res, nil
}

// reporting hands every failed export to onError and not to
// OpenTelemetry's global error handler (the SDK's batcher reports what its
// exporter returns there).
type reporting struct {
	sdktrace.SpanExporter
	onError func(error)
}

func (r reporting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := r.SpanExporter.ExportSpans(ctx, spans); err != nil {
		r.onError(fmt.Errorf("exporting %d spans: %w", len(spans), err))
	}
	return nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "<unparsable URL>"
}
