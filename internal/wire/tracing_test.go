package wire_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

func noEnv(string) (string, bool) { return "", false }

// TestTracingFromConfig: tracing is off without tracing.endpoint (and
// without the variables), on with it, built once per builder, named after
// tracing.serviceName; a bad key is refused naming it.
func TestTracingFromConfig(t *testing.T) {
	recv := tracingtest.Start(t)
	off := newBuilder(t, builderConfig(t), wire.WithTracingOptions(tracing.WithLookupEnv(noEnv)))
	p, err := off.Tracing()
	if err != nil || p.Enabled() {
		t.Fatalf("without tracing.endpoint: enabled %v, %v; want off", p.Enabled(), err)
	}

	cfg := builderConfig(t)
	cfg.Tracing = config.Tracing{Endpoint: recv.GRPCURL(), Protocol: "grpc", ServiceName: "stagehand-prod"}
	b := newBuilder(t, cfg, wire.WithTracingOptions(tracing.WithLookupEnv(noEnv)))
	p, err = b.Tracing()
	if err != nil || !p.Enabled() {
		t.Fatalf("with tracing.endpoint: enabled %v, %v; want on", p.Enabled(), err)
	}
	if again, _ := b.Tracing(); again != p {
		t.Error("Tracing built twice")
	}
	_, span := p.Tracer("test").Start(context.Background(), "from config")
	span.End()
	flush(t, p)
	if got := recv.Spans(); len(got) != 1 || got[0].Service != "stagehand-prod" || got[0].Via != "grpc" {
		t.Errorf("spans received %+v: want one of stagehand-prod over grpc", got)
	}

	bad := builderConfig(t)
	bad.Tracing = config.Tracing{Endpoint: "http://otel:4318", Protocol: "http/json"}
	if _, err := newBuilder(t, bad).Tracing(); err == nil || !strings.Contains(err.Error(), `tracing: configuring tracing: protocol "http/json"`) {
		t.Errorf("protocol http/json: %v", err)
	}
}

func flush(t *testing.T, p *tracing.Provider) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTracingPushes: the builder's webhook receiver has the deploy tracer
// remember each push's receipt, so that the pass planning the pushed
// revision is a child of it; without tracing no handler is added (a push
// to a receiver with no handler is ignored).
func TestTracingPushes(t *testing.T) {
	recv := tracingtest.Start(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	const after = "0123456789abcdef0123456789abcdef01234567"
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"full_name":"acme/manifests"}}`, after)
	deliver := func(h http.Handler, id string) string {
		srv := httptest.NewServer(h)
		defer srv.Close()
		code, msg, err := githubtest.Send(context.Background(), srv.URL, "s3cret", githubtest.Delivery{Event: "push", ID: id, Body: []byte(body)})
		if err != nil || code != http.StatusOK {
			t.Fatalf("push delivery: %d %s %v", code, msg, err)
		}
		return msg
	}

	cfg := builderConfig(t)
	cfg.GitHub.WebhookSecretFile = secret
	cfg.Tracing.Endpoint = recv.HTTPURL()
	b := newBuilder(t, cfg, wire.WithTracingOptions(tracing.WithLookupEnv(noEnv)))
	p, err := b.Tracing()
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Webhook()
	if err != nil {
		t.Fatal(err)
	}
	deliver(p.Handler(r), "1")
	_, pass := p.Deploys().Pass(context.Background(), "devel", after)
	pass.End()
	flush(t, p)
	var receipt, passSpan tracingtest.Span
	for _, s := range recv.Spans() {
		switch s.Name {
		case "POST":
			receipt = s
		case "pass":
			passSpan = s
		}
	}
	if receipt.Attributes["stagehand.revision"] != after {
		t.Errorf("the receipt's span %+v does not name the revision pushed", receipt)
	}
	if passSpan.TraceID != receipt.TraceID || passSpan.ParentSpanID != receipt.SpanID {
		t.Errorf("the pass %+v is not the receipt's child (%s/%s)", passSpan, receipt.TraceID, receipt.SpanID)
	}

	cfg = builderConfig(t)
	cfg.GitHub.WebhookSecretFile = secret
	off := newBuilder(t, cfg, wire.WithTracingOptions(tracing.WithLookupEnv(noEnv)))
	r, err = off.Webhook()
	if err != nil {
		t.Fatal(err)
	}
	if msg := deliver(r, "2"); !strings.Contains(msg, `event \"push\" ignored`) && !strings.Contains(msg, `event "push" ignored`) {
		t.Errorf("without tracing the push was handled: %s", msg)
	}
}
