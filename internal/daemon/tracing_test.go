package daemon

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// tracedTo is a tracer provider exporting to recv over OTLP/HTTP, whatever
// the test process's OTEL_* variables say.
func tracedTo(t testing.TB, recv *tracingtest.Receiver) *tracing.Provider {
	t.Helper()
	p, err := tracing.New(context.Background(), tracing.WithLookupEnv(func(string) (string, bool) { return "", false }),
		tracing.WithEndpoint(recv.HTTPURL()), tracing.WithServiceName("stagehand-reconciler"),
		tracing.WithErrorHandler(func(err error) { t.Errorf("exporting spans: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func flushSpans(t testing.TB, p *tracing.Provider, recv *tracingtest.Receiver) []tracingtest.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return recv.Spans()
}

// TestTraceOfAPush: on the real daemon, real git and the real API server,
// one push (its webhook carrying a traceparent) makes one trace: the
// webhook's receipt continues the caller's trace, and each environment's
// pass at the pushed revision is its child, each step of the pass the
// pass's child and the patch and the rollout wait the apply's, with the
// environment, revision and planHash. prod's plan waits for approval; its
// approval (an API call with a traceparent of its own) is a trace of the
// call, the decision, the approval's wait (linked to the pass that
// proposed the plan) and the steps that applied it.
func TestTraceOfAPush(t *testing.T) {
	recv := tracingtest.Start(t)
	p := tracedTo(t, recv)
	h := newHarness(t)
	h.apiOpts = []api.Option{api.WithTracing(p)}
	r := h.startWith([]wire.Option{wire.WithTracingProvider(p)})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	r.waitPending(t, "prod", r.environment(t, "prod").Observation.Revision)

	rev := h.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": manifestJSON(true, map[string]string{"web": "1.1.0"}),
		"environments/prod/manifest.json":  manifestJSON(false, map[string]string{"web": "1.1.0"}),
	}, "web 1.1.0")
	const pushTrace, pushParent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"ref":"refs/heads/main","after":"` + rev + `","repository":{"clone_url":"` + h.url + `","full_name":"acme/manifests"}}`
	req, err := githubtest.Delivery{Event: "push", ID: "push-1", Body: []byte(body)}.Request(context.Background(), r.url+"/webhook/github", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("traceparent", "00-"+pushTrace+"-"+pushParent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("push webhook: %d", resp.StatusCode)
	}
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.1.0")
	pend := r.waitPending(t, "prod", rev)
	seen := time.Now()
	testenv.WaitFor(t, 30*time.Second, "devel's deploy of "+approval.ShortRevision(rev)+" recorded", func() bool {
		hist := r.history(t, "devel")
		return len(hist) > 0 && hist[0].Revision == rev
	})

	const approveTrace = "0af7651916cd43dd8448eb211c80319c"
	approve, err := http.NewRequest("POST", r.url+"/api/v1/environments/prod/approve", strings.NewReader(`{"planHash":"`+pend.PlanHash+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	approve.Header.Set("Authorization", "Bearer "+testToken)
	approve.Header.Set("traceparent", "00-"+approveTrace+"-b7ad6b7169203331-01")
	resp, err = http.DefaultClient.Do(approve)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.1.0")
	testenv.WaitFor(t, 30*time.Second, "prod's deploy of "+approval.ShortRevision(rev)+" recorded", func() bool {
		hist := r.history(t, "prod")
		return len(hist) > 0 && hist[0].Revision == rev
	})
	r.stop()
	spans := flushSpans(t, p, recv)

	var receipt tracingtest.Span
	passes := map[string]tracingtest.Span{}
	var gateOfProd, approveCall, decision, wait tracingtest.Span
	for _, s := range spans {
		switch {
		case s.TraceID == pushTrace && s.Name == "POST /webhook/github":
			receipt = s
		case s.TraceID == pushTrace && s.Name == "pass":
			if _, dup := passes[s.Attributes["stagehand.environment"]]; dup {
				t.Errorf("two passes of %s in the push's trace", s.Attributes["stagehand.environment"])
			}
			passes[s.Attributes["stagehand.environment"]] = s
		case s.TraceID == approveTrace && s.Name == "POST /api/v1/environments/{env}/approve":
			approveCall = s
		case s.TraceID == approveTrace && s.Name == "approve":
			decision = s
		case s.TraceID == approveTrace && s.Name == "approval wait":
			wait = s
		}
	}
	if receipt.ParentSpanID != pushParent || receipt.Attributes["stagehand.revision"] != rev {
		t.Fatalf("the webhook's receipt %+v: want the child of the push's traceparent, naming %s", receipt, rev)
	}
	for _, env := range []string{"devel", "prod"} {
		ps := passes[env]
		if ps.ParentSpanID != receipt.SpanID || ps.Attributes["stagehand.revision"] != rev {
			t.Errorf("%s's pass %+v: want the receipt's child at %s", env, ps, rev)
		}
	}
	wantDevel := []string{"pass", "  fetch", "  resolve", "  plan", "  gate", "  apply", "    patch", "    rollout wait",
		"  verify", "  release", "  record"}
	if diff := cmp.Diff(wantDevel, tracingtest.Subtree(spans, passes["devel"].SpanID)); diff != "" {
		t.Errorf("devel's pass (-want +got):\n%s", diff)
	}
	wantProd := []string{"pass", "  fetch", "  resolve", "  plan", "  gate"}
	if diff := cmp.Diff(wantProd, tracingtest.Subtree(spans, passes["prod"].SpanID)); diff != "" {
		t.Errorf("prod's pass (-want +got):\n%s", diff)
	}
	for _, s := range spans {
		if s.ParentSpanID != passes["prod"].SpanID {
			continue
		}
		if s.Name == "gate" {
			gateOfProd = s
		}
		if s.Name == "plan" || s.Name == "gate" {
			if s.Attributes["stagehand.plan_hash"] != pend.PlanHash || s.Attributes["stagehand.revision"] != rev {
				t.Errorf("prod's %s step: attributes %v, want planHash %s and revision %s", s.Name, s.Attributes, pend.PlanHash, rev)
			}
		}
	}

	if approveCall.ParentSpanID != "b7ad6b7169203331" || decision.ParentSpanID != approveCall.SpanID ||
		decision.Attributes["stagehand.plan_hash"] != pend.PlanHash || decision.Attributes["stagehand.environment"] != "prod" {
		t.Errorf("approval call %+v, decision %+v: want the decision the call's child, naming prod's plan", approveCall, decision)
	}
	wantDecision := []string{"approve", "  approval wait", "  apply", "    patch", "    rollout wait", "  verify", "  release", "  record"}
	if diff := cmp.Diff(wantDecision, tracingtest.Subtree(spans, decision.SpanID)); diff != "" {
		t.Errorf("the approval's trace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]tracingtest.Link{{TraceID: pushTrace, SpanID: gateOfProd.SpanID}}, wait.Links); diff != "" {
		t.Errorf("the approval's wait links (-want +got):\n%s", diff)
	}
	// The proposal time is on the API server's clock, which the daemon knows
	// from whole-second Date headers; the span is on this process's clock.
	// The wait began before the test saw the plan pending (give or take that
	// estimate) and ended once the approval was asked for.
	if wait.Start.After(seen.Add(time.Second)) || wait.Start.Before(pend.ProposedAt.Add(-time.Minute)) ||
		wait.End.Before(approveCall.Start) || wait.End.After(decision.End) {
		t.Errorf("the approval's wait from %v to %v: want from the proposal (%v, seen pending at %v) until after the approval's call at %v",
			wait.Start, wait.End, pend.ProposedAt, seen, approveCall.Start)
	}
}

// TestTraceFailedVerification: a verification task that fails marks its
// span Error, under the pass's verify step, with its result.
func TestTraceFailedVerification(t *testing.T) {
	recv := tracingtest.Start(t)
	p := tracedTo(t, recv)
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	test := &runner{result: sequence.Result{Result: promote.ResultFail, Message: "2 of 3 requests answered 503"}}
	d, _, _ := sequenceDaemonWith(t, h, []wire.Option{wire.WithTracingProvider(p)}, WithTask(promote.TaskTest, test.run))
	if err := d.Once(context.Background()); err == nil || !strings.Contains(err.Error(), "task test finished with fail") {
		t.Fatalf("Once: %v, want the failed test task", err)
	}
	spans := flushSpans(t, p, recv)
	var task, verify tracingtest.Span
	for _, s := range spans {
		switch s.Name {
		case "verification test":
			task = s
		case "verify":
			verify = s
		}
	}
	if task.ParentSpanID == "" || task.ParentSpanID != verify.SpanID {
		t.Fatalf("the test task's span %+v is not the verify step's (%+v) child", task, verify)
	}
	if !task.Error || task.Message != "2 of 3 requests answered 503" || task.Attributes["stagehand.result"] != "fail" ||
		task.Attributes["stagehand.environment"] != "devel" {
		t.Errorf("the failed task's span: error %v %q, attributes %v; want Error with the task's message, result fail, devel",
			task.Error, task.Message, task.Attributes)
	}
}
