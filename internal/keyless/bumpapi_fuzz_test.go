package keyless

import (
	"bytes"
	"encoding/json"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// FuzzBumpBody posts arbitrary bodies to the keyless bump API with a fresh,
// genuine token of acme/checkout-api each time: the answer is one of the
// documented statuses, never a 5xx or a panic, and a bump happens only in
// devel (the one stage accepting bumps) and only to the caller's own file.
func FuzzBumpBody(f *testing.F) {
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","container":"checkout-worker","tag":"1.6.0","digest":"sha256:` + strings.Repeat("ab", 32) + `"}`))
	f.Add([]byte(`{"environment":"staging","service":"checkout-api","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"payments-api","file":"payments-api.json","tag":"9.9.9"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","file":"../staging/checkout-api.json","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"../staging","service":"checkout-api","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"1.6.0","mergeTimeout":"-1s"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"1.6.0 ; rm"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"1.6.0","force":true}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"1.6.0"}{}`))
	// Ownership by name (#26): the root manifest, a file owners gives to
	// others, the caller's own file in other cases.
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","file":"manifest.json","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"nightly-report","file":"shared-jobs.json","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","file":"Checkout-API.json","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","file":"checkout-api.JSON","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","file":"checkout-api.json.json","tag":"1.6.0"}`))
	f.Add([]byte(`{"environment":"staging","service":"checkout-api","file":"checkout-api.json","tag":"1.6.0"}`))
	f.Add([]byte(`[` + strings.Repeat("[", 200)))
	f.Add([]byte(`{"environment":"devel","service":"checkout-api","tag":"` + strings.Repeat("1", 70<<10) + `"}`))
	e := newBumpEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		// An auto-merge waits for the pull request's checks for minutes: not for a fuzz run.
		var sent BumpBody
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		decoded := dec.Decode(&sent) == nil
		if decoded && sent.AutoMerge {
			t.Skip("autoMerge")
		}
		code, out := e.post(t, e.gh.Sign(t, nil, e.github("acme/checkout-api")), string(body))
		switch code {
		case http.StatusOK:
			var res prbot.BumpResult
			if err := json.Unmarshal(out, &res); err != nil || !decoded || sent.Environment != "devel" || res.File != checkoutFile {
				t.Fatalf("200 for %q: %s (decoded %v)", body, out, decoded)
			}
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge:
			var refusal BumpError
			if err := json.Unmarshal(out, &refusal); err != nil || refusal.Error == "" || refusal.Reason == "" {
				t.Fatalf("%d for %q is not a refusal naming its reason: %s", code, body, out)
			}
		default:
			t.Fatalf("status %d for %q: %s", code, body, out)
		}
	})
}

// TestBumpAPIRefusesABadImageBeforeWriting: a tag or digest the manifest
// cannot hold is the caller's mistake (400 BadRequest naming it), found
// before a branch is made, not a failure of the bot (502).
func TestBumpAPIRefusesABadImageBeforeWriting(t *testing.T) {
	e := newBumpEnv(t)
	for _, tc := range []struct {
		name string
		body BumpBody
		want string
	}{
		{"tag with a space", BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0 ; rm"},
			`bumping checkout-api: invalid dockerTag \"1.6.0 ; rm\"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'`},
		{"tag of 129 characters", BumpBody{Environment: "devel", Service: "checkout-api", Tag: strings.Repeat("1", 129)}, "is 129 characters long"},
		{"digest of another algorithm", BumpBody{Environment: "devel", Service: "checkout-api", Container: "checkout-worker", Tag: "1.6.0", Digest: "md5:abc"},
			`bumping checkout-api/checkout-worker: invalid dockerDigest \"md5:abc\"; expected \"sha256:\" followed by 64 lowercase hexadecimal digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := e.post(t, e.gh.Sign(t, nil, e.github("acme/checkout-api")), tc.body)
			if code != http.StatusBadRequest || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), `"reason": "BadRequest"`) {
				t.Errorf("answered %d %s, want 400 BadRequest saying %q", code, out, tc.want)
			}
		})
	}
	if n := e.f.Sent.Count("POST", `/git/refs$`); n != 0 {
		t.Errorf("%d branches created for refused bumps", n)
	}
}

// FuzzBumpRepository bumps with a genuine token whose repository claim,
// environment, file and service are arbitrary, over keylessFiles: a bump
// happens only to a file owners gives the repository, or to the file
// spelled exactly like its name that is no root manifest, no file included
// from more than one place, and deployed only where nobody approves
// (devel).
func FuzzBumpRepository(f *testing.F) {
	for _, seed := range [][4]string{
		{"acme/checkout-api", "devel", "", "checkout-api"},
		{"acme/manifest", "devel", "", "hotfix"},
		{"acme/manifest", "devel", "manifest.json", "hotfix"},
		{"acme/Manifest", "devel", "", "hotfix"},
		{"acme/MANIFEST", "devel", "manifest.json", "hotfix"},
		{"acme/manifest.json", "devel", "manifest.json", "hotfix"},
		{"acme/./manifest", "devel", "", "hotfix"},
		{"acme/m\u0430nifest", "devel", "", "hotfix"},
		{"acme/\uff4danifest", "devel", "", "hotfix"},
		{"acme/manifest/", "devel", "", "hotfix"},
		{"acme/common", "devel", "", "nightly"},
		{"acme/Common", "devel", "common.json", "nightly"},
		{"acme/lib", "devel", "", "lib"},
		{"acme/staging-only", "devel", "", "staging-only"},
		{"acme/search", "staging", "", "search"},
		{"acme/search", "qa", "", "search"},
		{"acme/ledger", "staging", "", "ledger"},
		{"acme/ledger", "staging", "Ledger.json", "ledger"},
		{"acme/checkout-api", "staging", "checkout-api.json", "checkout-api"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	e := newBumpEnvWith(f, keylessFiles())
	f.Fuzz(func(t *testing.T, repo, env, file, service string) {
		body := BumpBody{Environment: env, File: file, Service: service, Tag: "1.2.3"}
		code, out := e.post(t, e.gh.Sign(t, nil, e.github(repo)), body)
		switch code {
		case http.StatusOK:
			var res prbot.BumpResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("200 is no result: %s", out)
			}
			owners := strings.EqualFold(repo, "acme/ledger") && env == "staging" && res.File == "environments/staging/ledger.json"
			byName := env == "devel" && res.File == "environments/devel/"+conventionalFile(repo) &&
				!slices.Contains([]string{"manifest.json", "common.json", "lib.json", "staging-only.json"}, conventionalFile(repo))
			if !owners && !byName {
				t.Fatalf("repository %q bumped %s in %q (asked for %q)", repo, res.File, env, file)
			}
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
			var refusal BumpError
			if err := json.Unmarshal(out, &refusal); err != nil || refusal.Error == "" || refusal.Reason == "" {
				t.Fatalf("%d is not a refusal naming its reason: %s", code, out)
			}
		default:
			t.Fatalf("status %d for repository %q, %+v: %s", code, repo, body, out)
		}
	})
}
