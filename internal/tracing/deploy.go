package tracing

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of Stagehand's own spans.
const scope = "github.com/stagehand-gitops/stagehand"

// The attributes of a deploy's spans.
const (
	AttrEnvironment = attribute.Key("stagehand.environment")
	AttrRevision    = attribute.Key("stagehand.revision")
	AttrPlanHash    = attribute.Key("stagehand.plan_hash")
	// AttrTask is a verification task's index in its sequence, AttrResult
	// its result (pass, warning, fail).
	AttrTask   = attribute.Key("stagehand.task")
	AttrResult = attribute.Key("stagehand.result")
)

// rememberedPushes and rememberedProposals bound what Deploys keeps: the
// receipts of the last pushes, the proposing passes of the last plans.
const (
	rememberedPushes    = 256
	rememberedProposals = 1024
)

// Deploys traces deploys: it remembers the span of each push's receipt by
// the revision pushed, so that the passes planning that revision are its
// children (one push, one trace across environments), and the span of the
// pass that proposed each plan, so that the approval's span links to it.
// Its zero value is not usable: get it from Provider.Deploys.
type Deploys struct {
	tracer trace.Tracer
	on     bool

	mu        sync.Mutex
	pushes    *bounded // revision → the span of the push's receipt
	proposals *bounded // environment + planHash → the span of the proposing pass
	traced    map[string]passMark
}

// passMark is the last pass traced in an environment: its revision and
// whether it failed.
type passMark struct {
	revision string
	failed   bool
}

// Deploys is p's deploy tracer (one per Provider).
func (p *Provider) Deploys() *Deploys {
	if p == nil {
		return Off().Deploys()
	}
	p.deploysOnce.Do(func() {
		p.deploys = &Deploys{tracer: p.Tracer(scope), on: p.Enabled(), pushes: newBounded(rememberedPushes),
			proposals: newBounded(rememberedProposals), traced: map[string]passMark{}}
	})
	return p.deploys
}

// Enabled says whether d records spans.
func (d *Deploys) Enabled() bool { return d != nil && d.on }

// Tracer is d's tracer.
func (d *Deploys) Tracer() trace.Tracer { return d.tracer }

// OnPush is a webhook handler of "push" events (internal/webhook's Handler
// shape, written out): it remembers the span of the push's receipt, which
// ctx carries, by the revision pushed. It registers nothing and fails
// nothing: a payload it cannot read is left to the push handler proper.
func (d *Deploys) OnPush(ctx context.Context, payload []byte) {
	if !d.Enabled() {
		return
	}
	sc := trace.SpanContextFromContext(ctx)
	var p struct {
		After   string `json:"after"`
		Deleted bool   `json:"deleted"`
	}
	if !sc.IsValid() || json.Unmarshal(payload, &p) != nil || p.Deleted || len(p.After) != 40 {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(AttrRevision.String(p.After))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pushes.put(p.After, sc)
}

// Pass starts the span of a pass over env at revision, or returns ctx as
// it is and a span that records nothing when the pass is not traced. A pass
// is traced when its revision is new to env in this process, or the last
// traced pass at that revision failed: passes that find nothing new make no
// traces. The first pass at a revision whose push this process received is
// a child of the push's receipt; any other is a root. End it with EndPass.
func (d *Deploys) Pass(ctx context.Context, env, revision string) (context.Context, trace.Span) {
	if !d.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	d.mu.Lock()
	last, seen := d.traced[env]
	if seen && last.revision == revision && !last.failed {
		d.mu.Unlock()
		return ctx, trace.SpanFromContext(context.Background())
	}
	d.traced[env] = passMark{revision: revision}
	parent, pushed := d.pushes.get(revision)
	d.mu.Unlock()
	opts := []trace.SpanStartOption{trace.WithAttributes(AttrEnvironment.String(env), AttrRevision.String(revision))}
	if pushed && !(seen && last.revision == revision) {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return d.tracer.Start(ctx, "pass", opts...)
}

// EndPass ends a pass's span, marking it Error with err; a pass that
// failed is traced again at the next pass at the same revision.
func (d *Deploys) EndPass(span trace.Span, env string, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		d.mu.Lock()
		m := d.traced[env]
		m.failed = true
		d.traced[env] = m
		d.mu.Unlock()
	}
	span.End()
}

// Decision starts the span of a decision on env's plan planHash (an
// approval, a rejection, a release approval) as a child of ctx's span (the
// API call, the webhook of a check-run click): the steps it runs are its
// children. End it with End.
func (d *Deploys) Decision(ctx context.Context, name, env, planHash string) (context.Context, trace.Span) {
	if !d.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return d.tracer.Start(ctx, name, trace.WithAttributes(AttrEnvironment.String(env), AttrPlanHash.String(planHash)))
}

// Proposed remembers ctx's span (the pass that proposed the plan) as the
// one env's plan planHash was proposed in.
func (d *Deploys) Proposed(ctx context.Context, env, planHash string) {
	sc := trace.SpanContextFromContext(ctx)
	if !d.Enabled() || !sc.IsValid() {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(AttrPlanHash.String(planHash))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.proposals.put(env+"\x00"+planHash, sc)
}

// Waited records the wait for the approval of env's plan planHash, which
// lasted waited until now, as a span under ctx's (the decision's) made once
// the wait is over: no span is held open while a plan waits for hours. The
// caller measures waited on the clock the proposal time was written with
// (the API server's, shared by replicas); the span is placed on this
// process's clock, as every other span is, so a proposal time written on
// another clock never puts the wait's start after its end. It links to the
// pass that proposed the plan when this process remembers it (not after a
// restart, nor when another replica proposed it).
func (d *Deploys) Waited(ctx context.Context, env, planHash string, waited time.Duration) {
	if !d.Enabled() {
		return
	}
	now := time.Now()
	opts := []trace.SpanStartOption{trace.WithTimestamp(now.Add(-max(waited, 0))),
		trace.WithAttributes(AttrEnvironment.String(env), AttrPlanHash.String(planHash))}
	d.mu.Lock()
	proposed, ok := d.proposals.get(env + "\x00" + planHash)
	d.mu.Unlock()
	if ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: proposed}))
	}
	_, span := d.tracer.Start(ctx, "approval wait", opts...)
	span.End(trace.WithTimestamp(now))
}

// Step starts the span of a step named name under ctx's span.
func (d *Deploys) Step(ctx context.Context, name string) (context.Context, trace.Span) {
	if !d.Enabled() || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return d.tracer.Start(ctx, name)
}

// End ends span, marking it Error with err (when not nil).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// bounded is a map of spans that keeps its newest n entries.
type bounded struct {
	n     int
	order *list.List // of keys, newest first
	m     map[string]*list.Element
	vals  map[string]trace.SpanContext
}

func newBounded(n int) *bounded {
	return &bounded{n: n, order: list.New(), m: map[string]*list.Element{}, vals: map[string]trace.SpanContext{}}
}

func (b *bounded) put(k string, v trace.SpanContext) {
	if e, ok := b.m[k]; ok {
		b.order.MoveToFront(e)
	} else {
		b.m[k] = b.order.PushFront(k)
	}
	b.vals[k] = v
	for b.order.Len() > b.n {
		old := b.order.Remove(b.order.Back()).(string)
		delete(b.m, old)
		delete(b.vals, old)
	}
}

func (b *bounded) get(k string) (trace.SpanContext, bool) {
	v, ok := b.vals[k]
	return v, ok
}
