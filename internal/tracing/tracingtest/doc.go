// Package tracingtest is an in-process OTLP receiver for tests: it takes
// the spans a process exports over OTLP/HTTP (protobuf, gzip or not) and
// OTLP/gRPC, as a collector would, keeps them, and lets a test wait for the
// ones it expects.
package tracingtest
