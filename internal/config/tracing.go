package config

import (
	"net/url"
)

// Tracing is where and how a process sends its traces (OpenTelemetry,
// OTLP): reconciler.yaml's and prbot.yaml's tracing. Each key left out is
// taken from the standard OTEL_* variables; without an endpoint in either,
// tracing is off.
type Tracing struct {
	// Endpoint is the collector's base URL, http:// or https:// (as
	// OTEL_EXPORTER_OTLP_ENDPOINT).
	Endpoint string `json:"endpoint,omitempty"`
	// Protocol is http/protobuf or grpc (as OTEL_EXPORTER_OTLP_PROTOCOL).
	Protocol string `json:"protocol,omitempty"`
	// SampleRatio is the share of new traces recorded, 0 to 1.
	SampleRatio *float64 `json:"sampleRatio,omitempty"`
	// ServiceName names the process in its spans (as OTEL_SERVICE_NAME).
	ServiceName string `json:"serviceName,omitempty"`
}

// Validate reports each key out of range, naming it under prefix
// ("tracing").
func (t Tracing) Validate(prefix string, bad func(field, format string, a ...any)) {
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad(prefix+".endpoint", "%q: want the collector's http:// or https:// URL, e.g. http://otel-collector:4318", redactURL(t.Endpoint))
		case u.User != nil:
			bad(prefix+".endpoint", "%q: credentials go in OTEL_EXPORTER_OTLP_HEADERS, not the URL", redactURL(t.Endpoint))
		}
	}
	switch t.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		bad(prefix+".protocol", "%q: want http/protobuf or grpc", t.Protocol)
	}
	if r := t.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		bad(prefix+".sampleRatio", "%v: want from 0 to 1", *r)
	}
	if len(t.ServiceName) > 253 {
		bad(prefix+".serviceName", "%d characters: want at most 253", len(t.ServiceName))
	}
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "<unparsable URL>"
}
