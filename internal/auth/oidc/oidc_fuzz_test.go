package oidc

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/oidctest"
)

// FuzzVerify: whatever a caller sends as its bearer token, verification
// never panics and accepts nothing: the one genuine token was used before
// the fuzzing starts, so even a variant that still verifies is a replay.
func FuzzVerify(f *testing.F) {
	is := oidctest.New(f)
	v := New([]Issuer{{URL: is.URL(), Audience: "stagehand", Claims: ClaimsGitHub, Namespaces: []string{"acme"}}},
		oidctest.Client(is), 30*time.Second, time.Now)
	ctx := context.Background()
	genuine := is.Sign(f, nil, is.GitHubClaims("acme/checkout-api", "stagehand", time.Now()))
	if _, err := v.Verify(ctx, genuine); err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(genuine, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	for _, seed := range []string{
		genuine,
		parts[0] + "." + parts[1] + ".",
		none + "." + parts[1] + ".",
		parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+is.URL()+`","repository":"acme/../x"}`)) + "." + parts[2],
		"", "a.b.c", "..", strings.Repeat("A", 4096),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if c, err := v.Verify(ctx, raw); err == nil {
			t.Fatalf("accepted %q as %+v", raw, c)
		}
	})
}
