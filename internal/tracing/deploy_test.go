package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
)

const (
	rev1 = "1111111111111111111111111111111111111111"
	rev2 = "2222222222222222222222222222222222222222"
)

// TestDeploys: the passes planning a pushed revision are children of the
// push's receipt in every environment (one push, one trace); a second pass
// at the same revision makes no span, unless the one before failed (a
// retry, a root of its own); a revision nobody pushed is a root; the
// approval's wait is a span made when it ends, starting when the plan was
// proposed, linked to the proposing pass, under the decision's span.
func TestDeploys(t *testing.T) {
	recv := tracingtest.Start(t)
	p, flush := onTo(t, recv)
	d := p.Deploys()
	if d != p.Deploys() {
		t.Fatal("Deploys is not one per provider")
	}
	bg := context.Background()
	pass := func(env, rev string, err error) trace.SpanContext {
		ctx, span := d.Pass(bg, env, rev)
		_, step := d.Step(ctx, "fetch")
		End(step, err)
		d.EndPass(span, env, err)
		return span.SpanContext()
	}

	// The receipt of the push of rev1.
	ctx, receipt := p.Tracer("test").Start(bg, "POST /webhook/github")
	d.OnPush(ctx, []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":%q}`, rev1)))
	d.OnPush(ctx, []byte(`{"after":"not a sha"}`))
	receipt.End()

	devel := pass("devel", rev1, nil)
	prod := pass("prod", rev1, nil)
	if again := pass("devel", rev1, nil); again.IsValid() {
		t.Error("a second pass at the same revision made a span")
	}
	failing := pass("staging", rev1, errors.New("boom"))
	retry := pass("staging", rev1, nil)
	if !retry.IsValid() {
		t.Error("the pass after a failed one at the same revision made no span")
	}
	if after := pass("staging", rev1, nil); after.IsValid() {
		t.Error("a pass after a successful retry made a span")
	}
	polled := pass("devel", rev2, nil)

	// prod's plan at rev1 is proposed in a pass, approved an hour later.
	pctx, proposing := d.Pass(bg, "prod", rev2)
	d.Proposed(pctx, "prod", "abc123")
	d.EndPass(proposing, "prod", nil)
	dctx, decision := d.Decision(bg, "approve", "prod", "abc123")
	d.Waited(dctx, "prod", "abc123", time.Hour)
	decision.End()
	spans := flush()

	tree := tracingtest.Tree(spans, receipt.SpanContext().TraceID().String())
	want := []string{"POST /webhook/github", "  pass", "    fetch", "  pass", "    fetch", "  pass", "    fetch"}
	if diff := cmp.Diff(want, tree); diff != "" {
		t.Errorf("the push's trace (-want +got):\n%s", diff)
	}
	for _, sc := range []trace.SpanContext{devel, prod, failing} {
		if sc.TraceID() != receipt.SpanContext().TraceID() {
			t.Errorf("pass %s is not in the push's trace", sc.SpanID())
		}
	}
	for name, sc := range map[string]trace.SpanContext{"retry": retry, "polled": polled} {
		if sc.TraceID() == receipt.SpanContext().TraceID() {
			t.Errorf("the %s pass is in the push's trace", name)
		}
	}
	var wait, failed tracingtest.Span
	for _, s := range spans {
		switch {
		case s.Name == "approval wait":
			wait = s
		case s.Name == "pass" && s.SpanID == failing.SpanID().String():
			failed = s
		}
	}
	if !failed.Error || failed.Message != "boom" {
		t.Errorf("the failed pass's span: error %v %q, want Error boom", failed.Error, failed.Message)
	}
	if diff := cmp.Diff([]tracingtest.Link{{TraceID: proposing.SpanContext().TraceID().String(),
		SpanID: proposing.SpanContext().SpanID().String()}}, wait.Links); diff != "" {
		t.Errorf("the approval wait's links (-want +got):\n%s", diff)
	}
	if wait.ParentSpanID != decision.SpanContext().SpanID().String() || wait.End.Sub(wait.Start) != time.Hour ||
		wait.Attributes["stagehand.plan_hash"] != "abc123" || wait.Attributes["stagehand.environment"] != "prod" {
		t.Errorf("approval wait %+v: want under the decision, an hour long, with prod and abc123", wait)
	}
}

// TestWaitedAheadOfThisClock: a proposal time written on a clock ahead of
// this process's (the API server's, estimated from whole-second Date
// headers) gives a wait measured as negative; its span is empty, never one
// that ends before it starts.
func TestWaitedAheadOfThisClock(t *testing.T) {
	recv := tracingtest.Start(t)
	p, flush := onTo(t, recv)
	d := p.Deploys()
	ctx, decision := d.Decision(context.Background(), "approve", "prod", "abc123")
	d.Waited(ctx, "prod", "abc123", -400*time.Millisecond)
	decision.End()
	found := false
	for _, s := range flush() {
		if s.Name != "approval wait" {
			continue
		}
		found = true
		if !s.End.Equal(s.Start) {
			t.Errorf("the wait from %v to %v: want empty", s.Start, s.End)
		}
	}
	if !found {
		t.Error("no approval wait span")
	}
}

// TestDeploysBounded: the pushes remembered are the newest ones, whatever
// the number of pushes.
func TestDeploysBounded(t *testing.T) {
	recv := tracingtest.Start(t)
	p, _ := onTo(t, recv)
	d := p.Deploys()
	ctx, span := p.Tracer("test").Start(context.Background(), "receipt")
	defer span.End()
	for i := range rememberedPushes * 3 {
		d.OnPush(ctx, []byte(fmt.Sprintf(`{"after":"%040d"}`, i)))
	}
	if n := len(d.pushes.vals); n != rememberedPushes || d.pushes.order.Len() != rememberedPushes {
		t.Fatalf("%d pushes remembered, want %d", n, rememberedPushes)
	}
	if _, ok := d.pushes.get(fmt.Sprintf("%040d", rememberedPushes*3-1)); !ok {
		t.Error("the newest push is forgotten")
	}
	if _, ok := d.pushes.get(strings.Repeat("0", 40)); ok {
		t.Error("the oldest push is remembered")
	}
}

// TestDeploysOff: when tracing is off nothing is remembered or started.
func TestDeploysOff(t *testing.T) {
	d := Off().Deploys()
	ctx, span := d.Pass(context.Background(), "devel", rev1)
	if span.IsRecording() || trace.SpanContextFromContext(ctx).IsValid() {
		t.Error("the off tracer started a pass span")
	}
	d.OnPush(ctx, []byte(fmt.Sprintf(`{"after":%q}`, rev1)))
	if len(d.pushes.vals) != 0 {
		t.Error("the off tracer remembered a push")
	}
}
