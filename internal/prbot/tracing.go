package prbot

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stagehand-gitops/stagehand/internal/tracing"
)

// WithTracerProvider traces every bump and promotion with tp (the
// process's, internal/tracing): a span "bump" or "promotion", the child of
// the span the caller's context carries (the keyless bump API's request, a
// webhook) or a trace of its own (a resync), with the pull request it
// opened or why not; a failure marks it Error. Default: nothing is traced.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return errors.New("nil tracer provider")
		}
		o.tracer = tp.Tracer("github.com/stagehand-gitops/stagehand/internal/prbot")
		return nil
	}
}

// tracerOf is o's tracer (a no-op one without WithTracerProvider).
func tracerOf(o options) trace.Tracer {
	if o.tracer == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return o.tracer
}

// Bump edits the service's container in environments/<env>/<file> on the
// bump branch and opens or updates its pull request (bumper, bump.go), in a
// span "bump" (WithTracerProvider).
func (b *Bot) Bump(ctx context.Context, req BumpRequest) (*BumpResult, error) {
	ctx, span := b.tracer.Start(ctx, "bump", trace.WithAttributes(tracing.AttrEnvironment.String(req.Env),
		attribute.String("stagehand.service", req.Service), attribute.String("stagehand.tag", req.Tag),
		attribute.String("stagehand.file", req.File)))
	res, err := b.bumps.bump(ctx, req)
	if res != nil && span.IsRecording() {
		span.SetAttributes(attribute.Int("stagehand.pr", res.PR), attribute.Bool("stagehand.changed", res.Changed),
			attribute.Bool("stagehand.blocked", res.Blocked), attribute.String("stagehand.reason", res.Reason))
		if res.Commit != "" {
			span.SetAttributes(tracing.AttrRevision.String(res.Commit))
		}
	}
	tracing.End(span, err)
	return res, err
}

// Promote evaluates the promotion from → to and makes its pull request match
// (promotions, promote.go), in a span "promotion" (WithTracerProvider).
func (b *Bot) Promote(ctx context.Context, from, to string, dryRun bool) (*PromoteResult, error) {
	ctx, span := b.tracer.Start(ctx, "promotion", trace.WithAttributes(attribute.String("stagehand.from", from),
		tracing.AttrEnvironment.String(to), attribute.Bool("stagehand.dry_run", dryRun)))
	res, err := b.promotions.promote(ctx, from, to, dryRun)
	if res != nil && span.IsRecording() {
		span.SetAttributes(attribute.String("stagehand.action", res.Action), attribute.Int("stagehand.pr", res.PR),
			attribute.Bool("stagehand.merged", res.Merged), attribute.String("stagehand.reason", res.Reason))
	}
	tracing.End(span, err)
	return res, err
}
