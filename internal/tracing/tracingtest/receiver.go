package tracingtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// maxBody caps one OTLP/HTTP request's body as a collector's default does.
const maxBody = 16 << 20

// Span is one span received, its IDs in hex and its attributes as strings.
type Span struct {
	Service      string // the resource's service.name
	TraceID      string
	SpanID       string
	ParentSpanID string // "": a root, or a child of a span another process exported
	Name         string
	Kind         string // "server", "internal", …
	Start, End   time.Time
	Attributes   map[string]string
	Error        bool // status Error
	Message      string
	Links        []Link
	Via          string // "http" or "grpc": how it was received
}

// Link is a span's link to another span.
type Link struct{ TraceID, SpanID string }

// Receiver is an OTLP trace receiver served on loopback: HTTP on HTTPURL,
// gRPC on GRPCURL.
type Receiver struct {
	http *httptest.Server
	grpc *grpc.Server
	addr string

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced when spans are added
}

// Start serves a Receiver until t ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	r.http = httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.http.Close()
		t.Fatalf("listening for OTLP/gRPC: %v", err)
	}
	r.addr = ln.Addr().String()
	r.grpc = grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(r.grpc, grpcService{r: r})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = r.grpc.Serve(ln)
	}()
	t.Cleanup(func() {
		r.grpc.Stop()
		<-served
		r.http.Close()
	})
	return r
}

// HTTPURL is the OTLP/HTTP endpoint's base URL (spans are posted to
// /v1/traces under it).
func (r *Receiver) HTTPURL() string { return r.http.URL }

// GRPCURL is the OTLP/gRPC endpoint's URL (http://, no TLS).
func (r *Receiver) GRPCURL() string { return "http://" + r.addr }

// Spans returns every span received so far, in the order received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Wait returns the spans received once done says they are enough, or an
// error naming the spans received when ctx ends first.
func (r *Receiver) Wait(ctx context.Context, done func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, changed := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("waiting for spans: %w; received %d: %s", ctx.Err(), len(spans), Names(spans))
		}
	}
}

// add keeps the spans of req.
func (r *Receiver) add(req *coltracepb.ExportTraceServiceRequest, via string) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, convert(s, service, via))
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, got...)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "POST /v1/traces only", http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "Content-Type "+ct+": want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = io.LimitReader(zr, maxBody)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg, "http")
	out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

type grpcService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.r.add(req, "grpc")
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func convert(s *tracepb.Span, service, via string) Span {
	out := Span{Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
		ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(),
		Kind:  strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
		Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
		Attributes: attributes(s.GetAttributes()), Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
		Message: s.GetStatus().GetMessage(), Via: via}
	for _, l := range s.GetLinks() {
		out.Links = append(out.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
	}
	return out
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Names lists spans' names, sorted, for messages.
func Names(spans []Span) string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Subtree is the span spanID and its descendants as Tree writes them.
func Subtree(spans []Span, spanID string) []string {
	for _, s := range spans {
		if s.SpanID == spanID {
			var in []Span
			for _, o := range spans {
				if o.TraceID == s.TraceID {
					in = append(in, o)
				}
			}
			return subtree(in, s)
		}
	}
	return nil
}

func subtree(spans []Span, root Span) []string {
	children := map[string][]Span{}
	for _, s := range spans {
		children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
	}
	var out []string
	var walk func(ss []Span, depth int)
	walk = func(ss []Span, depth int) {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
		for _, s := range ss {
			out = append(out, strings.Repeat("  ", depth)+s.Name)
			walk(children[s.SpanID], depth+1)
		}
	}
	walk([]Span{root}, 0)
	return out
}

// Tree is a trace's spans as an indented outline of names, children in the
// order they started, for comparing a trace's shape with cmp.Diff.
func Tree(spans []Span, traceID string) []string {
	children := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		if s.TraceID == traceID {
			ids[s.SpanID] = true
		}
	}
	var roots []Span
	for _, s := range spans {
		if s.TraceID != traceID {
			continue
		}
		if s.ParentSpanID == "" || !ids[s.ParentSpanID] {
			roots = append(roots, s)
			continue
		}
		children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
	}
	var out []string
	var walk func(ss []Span, depth int)
	walk = func(ss []Span, depth int) {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
		for _, s := range ss {
			out = append(out, strings.Repeat("  ", depth)+s.Name)
			walk(children[s.SpanID], depth+1)
		}
	}
	walk(roots, 0)
	return out
}
