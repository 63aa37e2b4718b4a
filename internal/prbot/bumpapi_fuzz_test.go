package prbot

import (
	"bytes"
	"encoding/json"
	"net/http"
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
			var res BumpResult
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
			if code != http.StatusBadRequest || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), `"reason":"BadRequest"`) {
				t.Errorf("answered %d %s, want 400 BadRequest saying %q", code, out, tc.want)
			}
		})
	}
	if n := e.f.sent.count("POST", `/git/refs$`); n != 0 {
		t.Errorf("%d branches created for refused bumps", n)
	}
}
