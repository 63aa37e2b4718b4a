package prbot

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestBumpAPIOwnershipAttacks tries to move a file the caller does not own
// with a genuine token: through the body, the repository claim, the case of
// names and GitLab subgroups. Every refusal writes nothing.
func TestBumpAPIOwnershipAttacks(t *testing.T) {
	files := bumpFiles()
	// checkout-api.json is given to one GitLab project by owners; two other
	// projects of the trusted group share the name checkout-api.
	files["pipeline.yaml"] = bumpPipeline + "  search.json: [acme-group/platform/search]\n"
	files["environments/devel/search.json"] = `{"services": [{"name": "search", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n"
	files["environments/devel/ledger.json"] = `{"services": [{"name": "ledger", "containers": [{"dockerTag": "3.0.0"}]}]}` + "\n"
	e := newBumpEnvWith(t, files)
	gh := func(repo string) string { return e.gh.Sign(t, nil, e.github(repo)) }
	gl := func(project string) string {
		return e.gl.Sign(t, nil, e.gl.GitLabClaims(project, "stagehand", e.clk.now()))
	}
	tests := []struct {
		name       string
		token      string
		body       any
		wantStatus int
		wantReason string
		wantError  string
	}{
		{"a body naming a service that another file defines", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", Service: "payments-api", Tag: "9.9.9"}, 403, "UnknownService", "environments/devel/checkout-api.json defines no payments-api"},
		{"a file path climbing out of the environment", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", File: "../staging/checkout-api.json", Service: "checkout-api", Tag: "9.9.9"}, 400, "BadRequest", `file "../staging/checkout-api.json": want a base name`},
		{"a file path into a subdirectory", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", File: "x/../checkout-api.json", Service: "checkout-api", Tag: "9.9.9"}, 400, "BadRequest", "want a base name"},
		{"an absolute file path", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", File: "/environments/devel/payments-api.json", Service: "payments-api", Tag: "9.9.9"}, 400, "BadRequest", "want a base name"},
		{"an environment with a backslash", gh("acme/checkout-api"),
			BumpBody{Environment: `devel\..\staging`, Service: "checkout-api", Tag: "9.9.9"}, 400, "BadRequest", "want a directory name"},
		{"a repository claim climbing to another repository's name", gh("acme/../payments-api"),
			BumpBody{Environment: "devel", Service: "payments-api", Tag: "9.9.9"}, 401, "Unauthorized", `repository "acme/../payments-api" is not a repository path`},
		{"another owner's file in another case", gh("Acme/Checkout-API"),
			BumpBody{Environment: "devel", File: "Payments-API.json", Service: "payments-api", Tag: "9.9.9"}, 403, "NotOwner", "may bump only Checkout-API.json, not Payments-API.json"},
		{"a file owners gives to others, named in another case", gh("acme/payments-api"),
			BumpBody{Environment: "devel", File: "SEARCH.json", Service: "search", Tag: "9.9.9"}, 403, "NotOwner", "not SEARCH.json"},
		{"a GitLab project of the same name in another subgroup than owners names", gl("acme-group/other-team/search"),
			BumpBody{Environment: "devel", Service: "search", Tag: "9.9.9"}, 403, "NotOwner", "repository acme-group/other-team/search owns no file"},
		{"a GitLab project of the same name, the file named in another case", gl("acme-group/other-team/search"),
			BumpBody{Environment: "devel", File: "Search.json", Service: "search", Tag: "9.9.9"}, 403, "NotOwner", "may bump only nothing, not Search.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := e.post(t, tt.token, tt.body)
			var got BumpError
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("answer %d is not an error body: %s", code, out)
			}
			if code != tt.wantStatus || got.Reason != tt.wantReason || !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("answered %d %+v\nwant %d %s containing %q", code, got, tt.wantStatus, tt.wantReason, tt.wantError)
			}
			lg := e.lastLog()
			switch {
			case lg.Status != tt.wantStatus || lg.Err == nil:
				t.Errorf("log = %+v, want status %d and the error", lg, tt.wantStatus)
			case tt.wantStatus == 401 && (lg.Caller != nil || lg.Claimed == nil || lg.Claimed.Repository == ""):
				t.Errorf("a refused token logs caller %+v, claimed %+v; want only the claimed identity", lg.Caller, lg.Claimed)
			case tt.wantStatus != 401 && (lg.Caller == nil || lg.Caller.Repository == ""):
				t.Errorf("a refusal after verification logs no caller identity: %+v", lg)
			}
		})
	}
	for _, route := range []struct{ method, path string }{{"PUT", "/contents/"}, {"POST", "/git/refs$"}, {"PATCH", "/git/refs/"}, {"POST", "/pulls$"}} {
		if n := e.f.sent.count(route.method, route.path); n != 0 {
			t.Fatalf("%d %s %s requests after refusals, want none", n, route.method, route.path)
		}
	}

	// What the same names may do: the repository in another case bumps the
	// file named after it (names are case-insensitive on GitHub), the
	// project owners names bumps search.json, and a project whose name
	// no owners entry lists owns its name's file in any subgroup.
	for _, ok := range []struct {
		name, token string
		body        BumpBody
		file        string
	}{
		{"the repository in another case, the file in the file's case", gh("Acme/Checkout-API"),
			BumpBody{Environment: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}, "environments/devel/checkout-api.json"},
		{"the GitLab project owners names", gl("acme-group/platform/search"),
			BumpBody{Environment: "devel", Service: "search", Tag: "1.1.0"}, "environments/devel/search.json"},
		{"a GitLab project in a subgroup, by its name", gl("acme-group/platform/team-a/ledger"),
			BumpBody{Environment: "devel", Service: "ledger", Tag: "3.1.0"}, "environments/devel/ledger.json"},
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
