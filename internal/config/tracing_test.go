package config

import "testing"

func TestTracing(t *testing.T) {
	quarter := 0.25
	for _, tc := range []struct {
		name, yaml string
		want       Tracing
		err        string
	}{
		{name: "unset: off", yaml: "{}", want: Tracing{}},
		{name: "every key", yaml: `tracing: {endpoint: "http://otel-collector:4317", protocol: grpc, sampleRatio: 0.25, serviceName: stagehand-prod}`,
			want: Tracing{Endpoint: "http://otel-collector:4317", Protocol: "grpc", SampleRatio: &quarter, ServiceName: "stagehand-prod"}},
		{name: "no scheme", yaml: `tracing: {endpoint: "otel-collector:4317"}`,
			err: `tracing.endpoint: "otel-collector:4317": want the collector's http:// or https:// URL`},
		{name: "credentials in the URL, not repeated", yaml: `tracing: {endpoint: "https://me:hunter2@otel.example"}`,
			err: `tracing.endpoint: "https://me:xxxxx@otel.example": credentials go in OTEL_EXPORTER_OTLP_HEADERS`},
		{name: "http/json", yaml: `tracing: {protocol: http/json}`, err: `tracing.protocol: "http/json": want http/protobuf or grpc`},
		{name: "ratio over 1", yaml: `tracing: {sampleRatio: 2}`, err: `tracing.sampleRatio: 2: want from 0 to 1`},
		{name: "unknown key", yaml: `tracing: {url: "http://otel:4318"}`, err: `unknown field "url"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Tracing { return c.Tracing })
		})
	}
}
