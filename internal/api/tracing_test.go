package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// TestTracing: with WithTracing every request has a server span named by
// its route (the API's own routes under /api/ included), continuing the
// caller's traceparent: an approval, the webhook (whose handlers run under
// the span), a refused call.
func TestTracing(t *testing.T) {
	recv := tracingtest.Start(t)
	p, err := tracing.New(context.Background(), tracing.WithLookupEnv(func(string) (string, bool) { return "", false }),
		tracing.WithEndpoint(recv.HTTPURL()))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := webhook.New("secret")
	if err != nil {
		t.Fatal(err)
	}
	var handlerTrace string
	hook.Handle("ping", func(ctx context.Context, _ webhook.Event) error {
		handlerTrace = spanOf(ctx)
		return nil
	})
	srv := newServer(t, &backend{pending: &approval.Pending{PlanHash: "sha256:p"}}, withOps(t), WithWebhook(hook), WithTracing(p))
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	send := func(method, path, tok, body string, h map[string]string) int {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("traceparent", parent)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	send("POST", "/api/v1/environments/prod/approve", token, `{"planHash":"sha256:p"}`, nil)
	send("GET", "/api/v1/environments", "", "", nil)
	body := `{"zen":"x","hook_id":1}`
	send("POST", "/webhook/github", "", body, map[string]string{"Content-Type": "application/json", "X-GitHub-Event": "ping",
		"X-GitHub-Delivery": "d1", "X-Hub-Signature-256": sign("secret", body)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Status string
		Continued    bool
	}
	var got []row
	for _, s := range recv.Spans() {
		got = append(got, row{s.Name, s.Attributes["http.response.status_code"],
			s.TraceID == "4bf92f3577b34da6a3ce929d0e0e4736" && s.ParentSpanID == "00f067aa0ba902b7"})
		if s.Name == "POST /webhook/github" && handlerTrace != s.TraceID+"/"+s.SpanID {
			t.Errorf("the webhook's handler ran under %s, not the request's span %s/%s", handlerTrace, s.TraceID, s.SpanID)
		}
	}
	want := []row{{"POST /api/v1/environments/{env}/approve", "202", true}, {"GET /api/", "401", true},
		{"POST /webhook/github", "200", true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server spans (-want +got):\n%s", diff)
	}
}

func sign(secret, body string) string { return githubtest.Sign(secret, []byte(body)) }

func spanOf(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	return sc.TraceID().String() + "/" + sc.SpanID().String()
}
