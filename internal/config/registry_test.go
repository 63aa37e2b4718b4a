package config

import (
	"testing"
	"time"
)

func TestRegistry(t *testing.T) {
	yes, no := true, false
	rate := func(v float64) *float64 { return &v }
	ttl := func(d time.Duration) *Duration { return &Duration{d} }
	for _, tc := range []struct {
		name, yaml string
		want       Registry
		err        string
	}{
		{name: "unset", yaml: "{}", want: Registry{VerifyDigests: &yes, PinDigests: &yes, WorkloadCredentials: &yes, RateLimit: rate(20), DigestCacheTTL: ttl(5 * time.Minute)}},
		{name: "everything", yaml: `registry: {workloadCredentials: false, dockerConfigFile: /etc/stagehand/registry/config.json,
  rateLimit: 2.5, digestCacheTTL: 0s, insecure: ["reg.local:5000"]}`,
			want: Registry{VerifyDigests: &yes, PinDigests: &yes, WorkloadCredentials: &no, DockerConfigFile: "/etc/stagehand/registry/config.json",
				RateLimit: rate(2.5), DigestCacheTTL: ttl(0), Insecure: []string{"reg.local:5000"}}},
		{name: "negative rate", yaml: "registry: {rateLimit: -1}", err: "registry.rateLimit: must be a number of requests a second, 0 or more (0: no limit), got -1"},
		{name: "negative ttl", yaml: "registry: {digestCacheTTL: -5m}", err: "registry.digestCacheTTL: must not be negative (0s: no cache), got -5m0s"},
		{name: "ttl not a duration", yaml: "registry: {digestCacheTTL: often}", err: `invalid duration "often"`},
		{name: "unknown key", yaml: "registry: {credentials: x}", err: `unknown field "credentials"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Registry { return c.Registry })
		})
	}
}
