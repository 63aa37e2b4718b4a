package reconcile

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Apply traces its patches and its rollout wait as children of the span
// its context carries, with that span's tracer provider: a caller that
// traces (the reconciler's pass) sees them in its trace, and one that does
// not pays nothing. The package sets up no tracing of its own and reads no
// global provider.
const tracerName = "github.com/stagehand-gitops/stagehand/pkg/reconcile"

// The attributes of Apply's spans.
const (
	attrTarget    = attribute.Key("stagehand.target")
	attrWorkload  = attribute.Key("stagehand.workload")
	attrService   = attribute.Key("stagehand.service")
	attrOutcome   = attribute.Key("stagehand.outcome")
	attrWorkloads = attribute.Key("stagehand.workloads")
)

func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// workloadAttrs name j's workload in a span.
func workloadAttrs(j *job) []attribute.KeyValue {
	return []attribute.KeyValue{attrTarget.String(j.key.Target),
		attrWorkload.String(j.key.Kind + " " + j.key.Namespace + "/" + j.key.Name), attrService.String(j.service)}
}

// endJob ends the span of j's patch with its outcome when it has one
// (blocked, failed); a failed patch marks it Error.
func endJob(span trace.Span, j *job) {
	if j.res.Outcome != "" {
		span.SetAttributes(attrOutcome.String(string(j.res.Outcome)))
	}
	if j.res.Outcome == OutcomeFailed {
		span.SetStatus(codes.Error, j.res.Message)
	}
	span.End()
}
