package keyless

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
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
	// Two files named billing but for case: which one acme/billing owns is
	// for the request to say.
	files["environments/devel/Billing.json"] = `{"services": [{"name": "billing", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n"
	files["environments/devel/BILLING.json"] = `{"services": [{"name": "billing", "containers": [{"dockerTag": "1.0.0"}]}]}` + "\n"
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
		{"a file named like the repository in two cases", gh("acme/billing"),
			BumpBody{Environment: "devel", Service: "billing", Tag: "1.1.0"}, 403, "NotOwner", "repository acme/billing may not bump environments/devel/BILLING.json, environments/devel/Billing.json: a repository owns by its name only the file spelled exactly like it, case included"},
		{"one of two files named like the repository but for case, named", gh("acme/billing"),
			BumpBody{Environment: "devel", File: "Billing.json", Service: "billing", Tag: "1.1.0"}, 403, "NotOwner", "repository acme/billing may bump only billing.json, not Billing.json (file names are matched exactly)"},
		{"the repository in another case, the file in the file's case", gh("Acme/Checkout-API"),
			BumpBody{Environment: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}, 403, "NotOwner", "may bump only Checkout-API.json, not checkout-api.json (file names are matched exactly)"},
		{"the repository in another case, no file", gh("Acme/Checkout-API"),
			BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.1"}, 403, "NotOwner", "repository Acme/Checkout-API may not bump environments/devel/checkout-api.json: a repository owns by its name only the file spelled exactly like it, case included (environments/devel/Checkout-API.json does not exist)"},
		{"the file in another case than the repository's", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", File: "CHECKOUT-API.json", Service: "checkout-api", Tag: "1.6.2"}, 403, "NotOwner", "may bump only checkout-api.json, not CHECKOUT-API.json"},
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
		if n := e.f.Sent.Count(route.method, route.path); n != 0 {
			t.Fatalf("%d %s %s requests after refusals, want none", n, route.method, route.path)
		}
	}

	// What the same names may do: the project owners names bumps
	// search.json, and a project whose name no owners entry lists owns its
	// name's file in any subgroup.
	for _, ok := range []struct {
		name, token string
		body        BumpBody
		file        string
	}{
		{"the repository bumps the file spelled like it", gh("acme/checkout-api"),
			BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0"}, "environments/devel/checkout-api.json"},
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

// TestClaimsAllowed is the stage's bumpClaims against a caller: each key
// narrows, a named event replaces the default refusal of runs that people
// without write access may start.
func TestClaimsAllowed(t *testing.T) {
	push := oidc.Caller{Ref: "refs/heads/main", WorkflowRef: "acme/checkout-api/.github/workflows/release.yml@refs/heads/main", Event: "push"}
	with := func(c oidc.Caller, f func(*oidc.Caller)) *oidc.Caller { f(&c); return &c }
	deploy := promote.BumpClaims{Ref: []string{"refs/heads/main"}, WorkflowRef: []string{"acme/checkout-api/.github/workflows/release.yml@"}, Event: []string{"push", "workflow_run"}}
	tests := []struct {
		name   string
		rules  promote.BumpClaims
		caller *oidc.Caller
		want   string // "" allowed, else part of the refusal
	}{
		{"no rules, a push", promote.BumpClaims{}, &push, ""},
		{"no rules, a pull request", promote.BumpClaims{}, with(push, func(c *oidc.Caller) { c.Event = "pull_request" }), `event "pull_request"`},
		{"no rules, a workflow_run", promote.BumpClaims{}, with(push, func(c *oidc.Caller) { c.Event = "workflow_run" }), `event "workflow_run"`},
		{"no rules, a GitLab external pull request", promote.BumpClaims{}, with(push, func(c *oidc.Caller) { c.Event = "external_pull_request_event" }), `event "external_pull_request_event"`},
		{"workflow_run named", deploy, with(push, func(c *oidc.Caller) { c.Event = "workflow_run" }), ""},
		{"an event not named", deploy, with(push, func(c *oidc.Caller) { c.Event = "workflow_dispatch" }), `event "workflow_dispatch" is not allowed; bumpClaims.event allows push, workflow_run`},
		{"a pull request named", promote.BumpClaims{Event: []string{"pull_request"}}, with(push, func(c *oidc.Caller) { c.Event = "pull_request" }), ""},
		{"another workflow", deploy, with(push, func(c *oidc.Caller) { c.WorkflowRef = "acme/checkout-api/.github/workflows/evil.yml@refs/heads/main" }), "bumpClaims.workflowRef allows prefixes"},
		{"the workflow of another repository", deploy, with(push, func(c *oidc.Caller) { c.WorkflowRef = "acme/other/.github/workflows/release.yml@refs/heads/main" }), "bumpClaims.workflowRef"},
		{"a tag", deploy, with(push, func(c *oidc.Caller) { c.Ref = "refs/tags/v1" }), `ref "refs/tags/v1" is not allowed`},
		{"a ref that only starts like main", deploy, with(push, func(c *oidc.Caller) { c.Ref = "refs/heads/main-evil" }), `ref "refs/heads/main-evil" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := claimsAllowed(tt.caller, &promote.Stage{Name: "devel", AcceptsBumps: true, BumpClaims: tt.rules})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("claimsAllowed = %v, want a refusal containing %q", err, tt.want)
			}
		})
	}
}

// TestBumpAPIRefusesUnderARollbackHold: a rollback's hold on the stage stops
// a keyless bump as it stops prbot bump (423, nothing opened), and the bump
// goes through once the hold is gone.
func TestBumpAPIRefusesUnderARollbackHold(t *testing.T) {
	e := newBumpEnv(t)
	ctx := context.Background()
	if _, err := e.f.Locks.PlaceHold(ctx, lock.NewHold("apps/devel", "alice", time.Now().Add(time.Hour), map[string]string{lock.HoldLinkPullRequest: "https://github.com/acme/manifests/pull/9"})); err != nil {
		t.Fatal(err)
	}
	body := BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0"}
	code, out := e.post(t, e.gh.Sign(t, nil, e.github("acme/checkout-api")), body)
	var got BumpError
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusLocked || got.Reason != "Locked" || got.Result == nil || !got.Result.Blocked || got.Result.PR != 0 ||
		!strings.Contains(got.Result.Reason, "apps/devel/hold is held by a rollback of alice") {
		t.Fatalf("bump under a rollback hold answered %d: %s", code, out)
	}
	if prs := e.f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 0 {
		t.Errorf("pull requests under a hold: %+v", prs)
	}
	if lg := e.lastLog(); lg.Status != http.StatusLocked || lg.Caller == nil || lg.Caller.Repository != "acme/checkout-api" {
		t.Errorf("log = %+v", lg)
	}
	if _, err := e.f.Locks.ReleaseHold(ctx, "apps/devel"); err != nil {
		t.Fatal(err)
	}
	if code, out := e.post(t, e.gh.Sign(t, nil, e.github("acme/checkout-api")), body); code != http.StatusOK || decodeResult(t, out).PR != 1 {
		t.Errorf("bump after the hold answered %d: %s", code, out)
	}
}
