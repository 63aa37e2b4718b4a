// Package tracing is how a Stagehand process traces its work with
// OpenTelemetry: one TracerProvider per process (New), built by
// internal/wire from the tracing configuration key or the standard OTEL_*
// variables, exporting over OTLP (HTTP or gRPC) and off by default (no
// exporter, no span recorded); the W3C traceparent of a request continued at
// a door (Handler), with no global propagator or provider; and the spans of a
// deploy (Deploys): a push's receipt, each step of a pass, the wait for an
// approval recorded when it ends and linked to the plan's trace.
//
// It imports nothing of internal/, so every package under internal/ may
// import it.
package tracing
