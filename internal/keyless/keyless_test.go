package keyless

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// keylessPipeline: devel and qa apply without a person (qa's sequence asks
// for one all the same), staging needs an approval and accepts bumps only
// of the files owners names.
const keylessPipeline = `stages:
  - name: devel
    lockPath: apps/devel
    acceptsBumps: true
  - name: qa
    acceptsBumps: true
    sequence: [approval, deployment]
  - name: staging
    promoteFrom: devel
    lockPath: apps/staging
    acceptsBumps: true
owners:
  ledger.json: [acme/ledger]
`

func keylessFiles() map[string]string {
	svc := func(name string) string {
		return `{"services": [{"name": "` + name + `", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n"
	}
	return map[string]string{
		"pipeline.yaml": keylessPipeline,
		// devel: the root manifest, an include shared with staging, a
		// diamond (lib.json below a.json and b.json), and a file of
		// devel's directory that only staging deploys (staging-only.json).
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "hotfix", "containers": [{"dockerTag": "1.0.0"}]}],
  "includes": ["./checkout-api.json", "./common.json", "./a.json", "./b.json"]}` + "\n",
		checkoutFile:                             checkoutJSON,
		"environments/devel/common.json":         svc("nightly"),
		"environments/devel/a.json":              `{"includes": ["./lib.json"]}` + "\n",
		"environments/devel/b.json":              `{"includes": ["./lib.json"]}` + "\n",
		"environments/devel/lib.json":            svc("lib"),
		"environments/devel/staging-only.json":   svc("staging-only"),
		"environments/qa/manifest.json":          `{"skipConfirmation": true, "includes": ["./search.json"]}` + "\n",
		"environments/qa/search.json":            svc("search"),
		"environments/staging/manifest.json":     `{"includes": ["./checkout-api.json", "../devel/common.json", "./ledger.json", "./search.json", "../devel/staging-only.json"]}` + "\n",
		"environments/staging/checkout-api.json": checkoutJSON,
		"environments/staging/ledger.json":       svc("ledger"),
		"environments/staging/search.json":       svc("search"),
	}
}

// TestBumpAPIOwnershipByName: a repository owns the file named after it
// only when that is no root manifest, no file included from more than one
// place, spelled exactly like it, and deployed only where no person
// approves; where one does, a keyless bump changes only a file owners
// names. Each refusal is a 403 naming the file and the rule, and writes
// nothing.
func TestBumpAPIOwnershipByName(t *testing.T) {
	e := newBumpEnvWith(t, keylessFiles())
	gh := func(repo string) string { return e.gh.Sign(t, nil, e.github(repo)) }
	for _, tt := range []struct {
		name       string
		token      string
		body       BumpBody
		wantStatus int
		wantReason string
		wantError  string
	}{
		{"acme/manifest, the root manifest by its name", gh("acme/manifest"),
			BumpBody{Environment: "devel", Service: "hotfix", Tag: "6.6.6"}, 403, "NotOwner",
			"repository acme/manifest may not bump environments/devel/manifest.json: a root manifest is never owned by a repository's name, only by an entry in pipeline.yaml's owners"},
		{"acme/manifest naming the root manifest", gh("acme/manifest"),
			BumpBody{Environment: "devel", File: "manifest.json", Service: "hotfix", Tag: "6.6.6"}, 403, "NotOwner", "a root manifest is never owned by a repository's name"},
		{"acme/manifest in an environment that needs an approval", gh("acme/manifest"),
			BumpBody{Environment: "staging", Service: "checkout-api", Tag: "6.6.6"}, 403, "NotOwner", "may not bump environments/staging/manifest.json: a root manifest"},
		{"acme/Manifest, the root manifest in another case", gh("acme/Manifest"),
			BumpBody{Environment: "devel", File: "manifest.json", Service: "hotfix", Tag: "6.6.6"}, 403, "NotOwner", "repository acme/Manifest may bump only Manifest.json, not manifest.json (file names are matched exactly)"},
		{"acme/MANIFEST, no file named", gh("acme/MANIFEST"),
			BumpBody{Environment: "devel", Service: "hotfix", Tag: "6.6.6"}, 403, "NotOwner",
			"repository acme/MANIFEST may not bump environments/devel/manifest.json: a repository owns by its name only the file spelled exactly like it, case included (environments/devel/MANIFEST.json does not exist)"},
		{"acme/manifest.json naming the root manifest", gh("acme/manifest.json"),
			BumpBody{Environment: "devel", File: "manifest.json", Service: "hotfix", Tag: "6.6.6"}, 403, "NotOwner", "repository acme/manifest.json may bump only manifest.json.json, not manifest.json"},
		{"acme/manifest.json, no file named", gh("acme/manifest.json"),
			BumpBody{Environment: "devel", Service: "hotfix", Tag: "6.6.6"}, 404, "NoFile", "environments/devel/manifest.json.json does not exist"},
		{"acme/./manifest", gh("acme/./manifest"),
			BumpBody{Environment: "devel", Service: "hotfix", Tag: "6.6.6"}, 401, "Unauthorized", `repository "acme/./manifest" is not a repository path`},
		{"a Cyrillic a in acme/manifest", gh("acme/m\u0430nifest"),
			BumpBody{Environment: "devel", Service: "hotfix", Tag: "6.6.6"}, 401, "Unauthorized", "is not a repository path"},
		{"a fullwidth acme/manifest", gh("acme/\uff4danifest"),
			BumpBody{Environment: "devel", File: "manifest.json", Service: "hotfix", Tag: "6.6.6"}, 401, "Unauthorized", "is not a repository path"},
		{"a repository named after an include of two environments", gh("acme/common"),
			BumpBody{Environment: "devel", Service: "nightly", Tag: "6.6.6"}, 403, "NotOwner",
			"repository acme/common may not bump environments/devel/common.json: it is included from more than one place (environments/devel/manifest.json, environments/staging/manifest.json), and a shared file is never owned by a repository's name"},
		{"a repository named after an include two files of one environment include", gh("acme/lib"),
			BumpBody{Environment: "devel", Service: "lib", Tag: "6.6.6"}, 403, "NotOwner",
			"repository acme/lib may not bump environments/devel/lib.json: it is included from more than one place (environments/devel/a.json, environments/devel/b.json)"},
		{"the include of two environments in another case", gh("acme/Common"),
			BumpBody{Environment: "devel", File: "common.json", Service: "nightly", Tag: "6.6.6"}, 403, "NotOwner", "may bump only Common.json, not common.json"},
		{"a file of devel's directory that only staging deploys", gh("acme/staging-only"),
			BumpBody{Environment: "devel", Service: "staging-only", Tag: "6.6.6"}, 403, "NotOwner",
			`repository acme/staging-only may not bump environments/devel/staging-only.json: environment "staging" needs an approval (environments/staging/manifest.json has no skipConfirmation: true), and there a keyless bump may change only a file pipeline.yaml's owners names`},
		{"an environment that needs an approval, a file by name", gh("acme/search"),
			BumpBody{Environment: "staging", Service: "search", Tag: "6.6.6"}, 403, "NotOwner",
			`repository acme/search may not bump environments/staging/search.json: environment "staging" needs an approval (environments/staging/manifest.json has no skipConfirmation: true)`},
		{"an environment that needs an approval, the same name's file", gh("acme/checkout-api"),
			BumpBody{Environment: "staging", Service: "checkout-api", Tag: "6.6.6"}, 403, "NotOwner", `environment "staging" needs an approval`},
		{"skipConfirmation with an approval task before the deployment", gh("acme/search"),
			BumpBody{Environment: "qa", Service: "search", Tag: "6.6.6"}, 403, "NotOwner",
			`repository acme/search may not bump environments/qa/search.json: environment "qa" needs an approval (its sequence in pipeline.yaml has an approval task before the deployment)`},
		{"a file owners names, in another case", gh("acme/ledger"),
			BumpBody{Environment: "staging", File: "Ledger.json", Service: "ledger", Tag: "6.6.6"}, 403, "NotOwner", "may bump only ledger.json, not Ledger.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := e.post(t, tt.token, tt.body)
			var got BumpError
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("answer %d is not an error body: %s", code, out)
			}
			if code != tt.wantStatus || got.Reason != tt.wantReason || !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("answered %d %+v\nwant %d %s containing %q", code, got, tt.wantStatus, tt.wantReason, tt.wantError)
			}
		})
	}
	for _, route := range []struct{ method, path string }{{"PUT", "/contents/"}, {"POST", "/git/refs$"}, {"PATCH", "/git/refs/"}, {"POST", "/pulls$"}} {
		if n := e.f.Sent.Count(route.method, route.path); n != 0 {
			t.Fatalf("%d %s %s requests after refusals, want none", n, route.method, route.path)
		}
	}

	// What is still allowed: a file of a skipConfirmation environment by
	// its name, and in the environment that needs an approval the file
	// owners names.
	for _, ok := range []struct {
		name, token string
		body        BumpBody
		file        string
	}{
		{"a skipConfirmation environment's file, by its name", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0"}, checkoutFile},
		{"an environment that needs an approval, the file owners names", gh("acme/ledger"),
			BumpBody{Environment: "staging", Service: "ledger", Tag: "1.1.0"}, "environments/staging/ledger.json"},
	} {
		t.Run(ok.name, func(t *testing.T) {
			code, out := e.post(t, ok.token, ok.body)
			if code != http.StatusOK {
				t.Fatalf("answered %d: %s", code, out)
			}
			if res := decodeResult(t, out); res.File != ok.file || !res.Changed {
				t.Errorf("result = %+v, want %s changed", res, ok.file)
			}
		})
	}
}

func TestConventionalFile(t *testing.T) {
	for _, tt := range []struct{ repo, want string }{
		{"acme/checkout-api", "checkout-api.json"},
		{"acme/Checkout-API", "Checkout-API.json"},
		{"acme/manifest.json", "manifest.json.json"},
		{"acme-group/platform/search", "search.json"},
		{"acme/.", ""},
		{"acme/..", ""},
		{"acme/", ""},
		{"acme/.hidden", ""},
		{"acme/m\u0430nifest", ""},
	} {
		if diff := cmp.Diff(tt.want, conventionalFile(tt.repo)); diff != "" {
			t.Errorf("conventionalFile(%q) (-want +got):\n%s", tt.repo, diff)
		}
	}
}
