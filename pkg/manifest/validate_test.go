package manifest

import (
	"strings"
	"testing"
)

func TestGrammars(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		rule  string
		check func(string) string
		valid []string
		bad   []string
	}{
		{
			rule:  "service name (Kubernetes label value)",
			check: checkName,
			valid: []string{"a", "checkout-api", "Events_Logger", "v1.2", "0", long},
			bad:   []string{"", "-api", "api-", ".a", "a_", "my api", "api/v2", "ünï", long + "a"},
		},
		{
			rule:  "docker tag",
			check: checkTag,
			valid: []string{"1.4.0", "e96ae0a", "latest", "_x", "v1.0.0-rc.1", "A_b.c-d", strings.Repeat("t", 128)},
			bad:   []string{"", "-x", ".x", "a:b", "a/b", "a+b", strings.Repeat("t", 129)},
		},
		{
			rule:  "docker digest",
			check: checkDigest,
			valid: []string{"sha256:" + strings.Repeat("0a", 32)},
			bad: []string{"", "sha256:", "sha256:" + strings.Repeat("0A", 32), "sha512:" + strings.Repeat("0a", 32),
				"sha256:" + strings.Repeat("0a", 31), "sha256:" + strings.Repeat("0a", 33), strings.Repeat("0a", 32), "sha256:" + strings.Repeat("g", 64)},
		},
		{
			rule:  "docker repository name",
			check: checkDockerName,
			valid: []string{"api", "acme/api", "acme/checkout-api", "a.b/c", "a__b", "a_b", "a--b", "registry.example.com/acme/api", "localhost:5000/api", "localhost/api", "otel/opentelemetry-collector"},
			bad:   []string{"", "Acme/api", "acme/", "/api", "a//b", "-api", "api-", "a___b", "a..b", "a._b", "host:port/api", "a b", "registry.example.com:99999/api", strings.Repeat("a", 256)},
		},
		{
			rule:  "SemVer 2.0",
			check: checkSemver,
			valid: []string{"0.1.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-rc.1", "1.0.0-0.3.7", "1.0.0-x-y-z.--", "1.0.0+build.1", "1.0.0-beta+exp.sha.5114f85"},
			bad:   []string{"", "1", "1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b", "1.2.3.4", "1.2.x", "1.2.3-ü"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			for _, v := range tt.valid {
				if msg := tt.check(v); msg != "" {
					t.Errorf("%q rejected: %s", v, msg)
				}
			}
			for _, v := range tt.bad {
				msg := tt.check(v)
				if msg == "" {
					t.Errorf("%q accepted", v)
					continue
				}
				if !strings.Contains(msg, "expect") && !strings.Contains(msg, "accepted") {
					t.Errorf("%q: message %q does not say what is accepted", v, msg)
				}
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		key  string
		want string
	}{
		{"dockertag", "dockerTag"},
		{"DOCKERNAME", "dockerName"},
		{"dockerDigst", "dockerDigest"},
		{"dockerImage", "dockerName"},
		{"image", ""},
		{"tag", ""},
		{"service", "services"},
		{"include", "includes"},
		{"skipConfirm", ""},
		{"skipConfirmaton", "skipConfirmation"},
		{"nmae", "name"},
		{"versoin", "version"},
		{strings.Repeat("x", 100), ""},
	}
	known := append(append(append([]string{}, rootKeys...), serviceKeys...), containerKeys...)
	for _, tt := range tests {
		if got := Suggest(tt.key, known); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
