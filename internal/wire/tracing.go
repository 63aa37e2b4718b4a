package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/version"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// WithTracingOptions are added after those the builder derives from
// tracing: (a test's exporter or variables; the binary's error handler).
func WithTracingOptions(opts ...tracing.Option) Option {
	return func(o *options) error {
		o.tracingOpts = append(o.tracingOpts, opts...)
		return nil
	}
}

// WithTracingProvider makes the builder's tracer provider p instead of one
// built from tracing: (a test's, exporting to its receiver).
func WithTracingProvider(p *tracing.Provider) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("tracing provider: nil")
		}
		o.tracing = p
		return nil
	}
}

// Tracing returns the process's tracer provider, built once from tracing:
// and the OTEL_* variables (tracing.Off when neither names an endpoint).
// The caller flushes it with Shutdown within the stop's grace.
func (d *deployParts) Tracing() (*tracing.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tracingLocked()
}

func (d *deployParts) tracingLocked() (*tracing.Provider, error) {
	if d.tracing != nil {
		return d.tracing, nil
	}
	if d.o.tracing != nil {
		d.tracing = d.o.tracing
		return d.tracing, nil
	}
	p, err := Tracing(d.cfg.Tracing, "stagehand-reconciler", d.o.tracingOpts...)
	if err != nil {
		return nil, err
	}
	d.tracing = p
	return p, nil
}

// Tracing builds a tracer provider from a tracing: section (reconciler.yaml's
// or prbot.yaml's), service naming the process where neither the section
// nor OTEL_SERVICE_NAME does, then opts.
func Tracing(c config.Tracing, service string, opts ...tracing.Option) (*tracing.Provider, error) {
	if c.ServiceName != "" {
		service = c.ServiceName
	}
	topts := []tracing.Option{tracing.WithServiceName(service), tracing.WithVersion(version.Get().Version)}
	if c.Endpoint != "" {
		topts = append(topts, tracing.WithEndpoint(c.Endpoint))
	}
	if c.Protocol != "" {
		topts = append(topts, tracing.WithProtocol(c.Protocol))
	}
	if c.SampleRatio != nil {
		topts = append(topts, tracing.WithSampleRatio(*c.SampleRatio))
	}
	p, err := tracing.New(context.Background(), append(topts, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return p, nil
}

// tracePushes has r's push deliveries remembered by p's deploy tracer, so
// that the passes planning a pushed revision join its receipt's trace. It
// is registered before any other push handler.
func tracePushes(r *webhook.Receiver, p *tracing.Provider) {
	if r == nil || !p.Enabled() {
		return
	}
	d := p.Deploys()
	r.Handle("push", func(ctx context.Context, e webhook.Event) error {
		d.OnPush(ctx, e.Payload)
		return nil
	})
}
