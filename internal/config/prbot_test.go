package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
)

func TestParsePrbotOIDC(t *testing.T) {
	const head = "github: {owner: acme, repo: manifests, tokenFile: /t, webhookSecretFile: /s}\n"
	c, err := ParsePrbot([]byte(head + "oidc:\n  issuers:\n    - {url: https://token.actions.githubusercontent.com, audience: stagehand, claims: github}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &PrbotOIDC{Issuers: []oidc.Issuer{{URL: "https://token.actions.githubusercontent.com", Audience: "stagehand", Claims: "github"}}, KeyRefresh: c.OIDC.KeyRefresh}
	if diff := cmp.Diff(want, c.OIDC); diff != "" || c.OIDC.KeyRefresh.Duration != 30*time.Second {
		t.Errorf("oidc (-want +got):\n%s\nkeyRefresh %v, want 30s", diff, c.OIDC.KeyRefresh)
	}
	if c, err := ParsePrbot([]byte(head)); err != nil || c.OIDC != nil {
		t.Errorf("no oidc: %+v, %v; want the bump API off", c, err)
	}
	for _, tt := range []struct{ in, want string }{
		{"oidc: {issuers: []}\n", "oidc.issuers: want at least one issuer"},
		{"oidc:\n  issuers:\n    - {url: http://gitlab.example.com, audience: stagehand, claims: gitlab, namespaces: [acme]}\n", `oidc.issuers[0].url "http://gitlab.example.com": want an https:// issuer URL`},
		{"oidc:\n  issuers:\n    - {url: https://gitlab.com, claims: gitlab}\n", "oidc.issuers[0].audience: required (the aud the CI job requests, e.g. stagehand); oidc.issuers[0].namespaces: required for gitlab issuers"},
		{"oidc:\n  issuers:\n    - {url: https://x.example.com, audience: a, claims: jenkins}\n", `oidc.issuers[0].claims "jenkins": want github or gitlab`},
		{"oidc:\n  issuers:\n    - {url: https://x.example.com, audience: a, claims: github, namespaces: [acme/]}\n    - {url: https://x.example.com, audience: b, claims: github}\n",
			`oidc.issuers[0].namespaces[0] "acme/": want an owner or group path such as acme or acme/platform; oidc.issuers[1].url "https://x.example.com": issuer listed twice`},
		{"oidc:\n  issuers:\n    - {url: https://x.example.com, audience: a, claims: github}\n  keyRefresh: -1s\n", "oidc.keyRefresh -1s: want at least 1s"},
		{"oidc:\n  issuers:\n    - {url: https://x.example.com, audience: a, claims: github}\n  keyRefresh: 0s\n", "oidc.keyRefresh 0s: want at least 1s"},
		{"oidc:\n  issuers:\n    - {url: https://x.example.com, audience: a, claim: github}\n", `unknown field "claim"`},
	} {
		if _, err := ParsePrbot([]byte(head + tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePrbot(%q) = %v\nwant an error containing %q", tt.in, err, tt.want)
		}
	}
}

func TestParsePrbot(t *testing.T) {
	c, err := ParsePrbot([]byte("github: {owner: acme, repo: manifests, tokenFile: /t, webhookSecretFile: /s}\nresync: 1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != "main" || c.Listen != ":8080" || c.WebhookPath != "/webhook/github" || c.Resync.Duration != time.Minute || c.HistoryDepth != 50 {
		t.Errorf("defaults = %+v", c)
	}
	for in, want := range map[string]string{
		"github: {owner: acme}\n": "github.owner and github.repo are required; github.app (appID, installationID, privateKeyFile) or github.tokenFile is required; github.webhookSecretFile is required",
		"github: {owner: a, repo: b, tokenFile: t, webhookSecretFile: s}\nbranch: x\n":           `unknown field "branch"`,
		"github: {owner: a, repo: b, tokenFile: t, webhookSecretFile: s}\nmerge: {method: ff}\n": `merge.method "ff"`,
	} {
		if _, err := ParsePrbot([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePrbot(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
