package keyless

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
	"github.com/stagehand-gitops/stagehand/internal/oidctest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

const bumpPipeline = `stages:
  - name: devel
    lockPath: apps/devel
    acceptsBumps: true
    bumpClaims: {ref: refs/heads/main}
  - name: staging
    promoteFrom: devel
owners:
  shared-jobs.json:
    repositories: [acme/payments-api, acme-group/payments-api]
    allowNewServices: true
`

const paymentsJSON = `{
  "services": [
    {"name": "payments-api", "containers": [{"dockerTag": "2.0.0"}]}
  ]
}
`

const sharedJobsJSON = `{
  "services": [
    {"name": "nightly-report", "containers": [{"dockerTag": "0.1.0"}]}
  ]
}
`

func bumpFiles() map[string]string {
	return map[string]string{
		"pipeline.yaml":                          bumpPipeline,
		"environments/devel/manifest.json":       `{"skipConfirmation": true, "includes": ["./checkout-api.json", "./payments-api.json", "./shared-jobs.json"]}` + "\n",
		checkoutFile:                             checkoutJSON,
		"environments/devel/payments-api.json":   paymentsJSON,
		"environments/devel/shared-jobs.json":    sharedJobsJSON,
		"environments/staging/manifest.json":     `{"includes": ["./checkout-api.json"]}` + "\n",
		"environments/staging/checkout-api.json": checkoutJSON,
	}
}

// bumpEnv is the bump API of a bot on the GitHub test server, trusting a
// GitHub-like and a GitLab-like issuer on loopback TLS.
type bumpEnv struct {
	f      *fixture
	gh, gl *oidctest.Issuer
	clk    *clock
	url    string
	mu     sync.Mutex
	logs   []BumpLog
}

func newBumpEnv(t testing.TB) *bumpEnv {
	t.Helper()
	return newBumpEnvWith(t, bumpFiles())
}

// newBumpEnvWith is newBumpEnv over the manifests repository files, with
// more options for the bump API.
func newBumpEnvWith(t testing.TB, files map[string]string, opts ...Option) *bumpEnv {
	t.Helper()
	e := &bumpEnv{f: newFixture(t, files), gh: oidctest.New(t), gl: oidctest.New(t), clk: &clock{}}
	b := e.f.bot(t, prbot.WithClock(e.clk.now))
	api, err := NewBumpAPI(b, append([]Option{
		WithIssuer(oidc.Issuer{URL: e.gh.URL(), Audience: "stagehand", Claims: oidc.ClaimsGitHub}),
		WithIssuer(oidc.Issuer{URL: e.gl.URL(), Audience: "stagehand", Claims: oidc.ClaimsGitLab, Namespaces: []string{"acme-group"}}),
		WithIssuerClient(oidctest.Client(e.gh, e.gl)), WithLocalClock(e.clk.now),
		WithBumpLog(func(l BumpLog) { e.mu.Lock(); defer e.mu.Unlock(); e.logs = append(e.logs, l) }),
		// The tests send many bumps from one repository on a clock that stands
		// still: no limit unless a test sets one (TestBumpAPIRateLimitPerCaller).
		WithBumpRateLimit(0, 1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+BumpsPath, api)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL + BumpsPath
	return e
}

// post sends a bump request; token "" sends none.
func (e *bumpEnv) post(t *testing.T, token string, body any) (int, []byte) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return resp.StatusCode, out
}

func (e *bumpEnv) lastLog() BumpLog {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs[len(e.logs)-1]
}

func (e *bumpEnv) github(repo string) map[string]any {
	return e.gh.GitHubClaims(repo, "stagehand", e.clk.now())
}

func decodeResult(t *testing.T, data []byte) *prbot.BumpResult {
	t.Helper()
	var res prbot.BumpResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("not a bump result: %v\n%s", err, data)
	}
	return &res
}

func TestBumpAPIBumpsTheCallersOwnFile(t *testing.T) {
	e := newBumpEnv(t)
	body := BumpBody{Environment: "devel", Service: "checkout-api", Container: "checkout-worker", Tag: "1.6.0", Digest: "sha256:" + strings.Repeat("ab", 32)}
	token := e.gh.Sign(t, nil, e.github("acme/checkout-api"))
	code, out := e.post(t, token, body)
	if code != http.StatusOK {
		t.Fatalf("answered %d: %s", code, out)
	}
	branch := "stagehand/bump-devel-checkout-api"
	res := decodeResult(t, out)
	want := &prbot.BumpResult{File: checkoutFile, Branch: branch, PR: 1, URL: res.URL, Commit: e.f.Srv.Repo(owner, repo).Branch(branch), Changed: true, Created: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	wantFile := strings.Replace(checkoutJSON, "\"dockerTag\": \"1.5.0\"\n        }", "\"dockerTag\": \"1.6.0\",\n          \"dockerDigest\": \""+digest+"\"\n        }", 1)
	if diff := cmp.Diff(wantFile, e.f.File(t, branch, checkoutFile)); diff != "" {
		t.Errorf("%s on %s (-want +got):\n%s", checkoutFile, branch, diff)
	}
	if prs := e.f.OpenPulls(); len(prs) != 1 || prs[0].Head != branch {
		t.Errorf("open pull requests = %+v, want one from %s", prs, branch)
	}
	lg := e.lastLog()
	if lg.Status != http.StatusOK || lg.Caller == nil || lg.Caller.Repository != "acme/checkout-api" || lg.Caller.Actor != "octocat" || lg.Result == nil || lg.Result.PR != 1 {
		t.Errorf("log = %+v, caller %+v", lg, lg.Caller)
	}

	// The same token again is a replay.
	code, out = e.post(t, token, BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.1"})
	if code != http.StatusUnauthorized || !strings.Contains(string(out), `"reason": "Replayed"`) {
		t.Errorf("replayed token answered %d: %s", code, out)
	}

	// The issuer rotates its key: the API, never restarted, takes the new key.
	k := e.gh.Rotate(t, false)
	e.clk.add(31 * time.Second)
	code, out = e.post(t, e.gh.Sign(t, k, e.github("acme/checkout-api")), BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.7.0"})
	if code != http.StatusOK {
		t.Fatalf("token signed by the rotated key answered %d: %s", code, out)
	}
	if res := decodeResult(t, out); res.PR != 1 || res.Created || !res.Changed {
		t.Errorf("second bump = %+v, want pull request #1 updated", res)
	}

	// GitLab: a project of a trusted group names one of its two files and
	// adds a service there, as owners allows.
	gl := e.gl.GitLabClaims("acme-group/payments-api", "stagehand", e.clk.now())
	code, out = e.post(t, e.gl.Sign(t, nil, gl), BumpBody{Environment: "devel", Service: "payments-export", Tag: "0.9.0"})
	if code != http.StatusBadRequest || !strings.Contains(string(out), "owns payments-api.json, shared-jobs.json: name one in file") {
		t.Errorf("bump without file of a repository owning two answered %d: %s", code, out)
	}
	gl = e.gl.GitLabClaims("acme-group/payments-api", "stagehand", e.clk.now())
	code, out = e.post(t, e.gl.Sign(t, nil, gl), BumpBody{Environment: "devel", File: "shared-jobs.json", Service: "payments-export", Tag: "0.9.0"})
	if code != http.StatusOK {
		t.Fatalf("GitLab bump answered %d: %s", code, out)
	}
	if got := e.f.File(t, "stagehand/bump-devel-shared-jobs", "environments/devel/shared-jobs.json"); !strings.Contains(got, `"payments-export"`) {
		t.Errorf("shared-jobs.json on its bump branch:\n%s", got)
	}
	if lg := e.lastLog(); lg.Caller.Repository != "acme-group/payments-api" || lg.Caller.Event != "push" || lg.Caller.Ref != "refs/heads/main" {
		t.Errorf("GitLab caller = %+v", lg.Caller)
	}
}

// TestBumpAPIRateLimitPerCaller: a repository's verified bumps past its
// burst are answered 429 with Retry-After, the reason and code
// TooManyRequests, before anything is bumped; another repository, and a
// request whose token does not verify, are not held by that bucket; the
// bucket refills on prbot's clock.
func TestBumpAPIRateLimitPerCaller(t *testing.T) {
	e := newBumpEnvWith(t, bumpFiles(), WithBumpRateLimit(1, 2))
	// staging accepts no bumps: a verified request refused without touching GitHub.
	body := BumpBody{Environment: "staging", Service: "checkout-api", Tag: "1.6.0"}
	send := func(repo string) (int, string, BumpError) {
		t.Helper()
		data, _ := json.Marshal(body)
		req, err := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if repo != "" {
			req.Header.Set("Authorization", "Bearer "+e.gh.Sign(t, nil, e.github(repo)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var be BumpError
		if err := json.NewDecoder(resp.Body).Decode(&be); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Retry-After"), be
	}
	for i := range 2 {
		if code, _, be := send("acme/checkout-api"); code != http.StatusForbidden || be.Reason != "EnvironmentRefused" {
			t.Fatalf("bump %d within the burst: %d %+v, want 403 EnvironmentRefused", i+1, code, be)
		}
	}
	code, retry, be := send("acme/checkout-api")
	want := BumpError{Error: "too many bumps from acme/checkout-api; retry after the Retry-After seconds", Code: "TooManyRequests", Reason: "TooManyRequests"}
	if code != http.StatusTooManyRequests || retry != "1" {
		t.Errorf("third bump: %d Retry-After %q, want 429 with Retry-After 1", code, retry)
	}
	if diff := cmp.Diff(want, be); diff != "" {
		t.Errorf("third bump's error (-want +got):\n%s", diff)
	}
	if lg := e.lastLog(); lg.Status != http.StatusTooManyRequests || lg.Caller == nil || lg.Caller.Repository != "acme/checkout-api" {
		t.Errorf("log of the refused bump = %+v", lg)
	}
	if code, _, be := send("acme/payments-api"); code != http.StatusForbidden || be.Reason != "EnvironmentRefused" {
		t.Errorf("another repository: %d %+v, want its own answer (403 EnvironmentRefused)", code, be)
	}
	if code, _, be := send(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %+v, want 401 (unverified requests are not counted, nor limited)", code, be)
	}
	e.clk.add(time.Second)
	if code, _, be := send("acme/checkout-api"); code != http.StatusForbidden {
		t.Errorf("a second later: %d %+v, want the bucket refilled by one", code, be)
	}
	if code, _, _ := send("acme/checkout-api"); code != http.StatusTooManyRequests {
		t.Errorf("right after: %d, want 429 again", code)
	}
}

func TestBumpAPIRefusals(t *testing.T) {
	e := newBumpEnv(t)
	stranger := oidctest.New(t)
	unpublished := oidctest.NewKey(t, "never-published")
	good := BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0"}
	with := func(c map[string]any, kv ...any) map[string]any {
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	tests := []struct {
		name       string
		token      func() string
		body       any
		wantStatus int
		wantReason string
		wantError  string
	}{
		{"no token", func() string { return "" }, good, 401, "Unauthorized", "no bearer token"},
		{"another audience", func() string {
			return e.gh.Sign(t, nil, e.gh.GitHubClaims("acme/checkout-api", "sts.amazonaws.com", e.clk.now()))
		}, good, 401, "Unauthorized", "wrong audience"},
		{"expired", func() string {
			return e.gh.Sign(t, nil, e.gh.GitHubClaims("acme/checkout-api", "stagehand", e.clk.now().Add(-6*time.Minute)))
		}, good, 401, "Unauthorized", "token expired"},
		{"unknown key", func() string { return e.gh.Sign(t, unpublished, e.github("acme/checkout-api")) }, good, 401, "Unauthorized", "signed by a key the issuer does not publish"},
		{"unknown issuer", func() string {
			return stranger.Sign(t, nil, stranger.GitHubClaims("acme/checkout-api", "stagehand", e.clk.now()))
		}, good, 401, "Unauthorized", "issuer not trusted"},
		{"another repository's file", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", File: "payments-api.json", Service: "payments-api", Tag: "9.9.9"}, 403, "NotOwner", "repository acme/checkout-api may bump only checkout-api.json, not payments-api.json"},
		{"a file owners gives to others", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", File: "shared-jobs.json", Service: "nightly-report", Tag: "9.9.9"}, 403, "NotOwner", "not shared-jobs.json"},
		{"a repository of another owner with the same name", func() string { return e.gh.Sign(t, nil, e.github("evil/checkout-api")) }, good, 403, "UntrustedRepository", "repository evil/checkout-api is not under a namespace trusted"},
		{"a GitLab project outside the trusted groups", func() string {
			return e.gl.Sign(t, nil, e.gl.GitLabClaims("someone/checkout-api", "stagehand", e.clk.now()))
		}, good, 403, "UntrustedRepository", "someone/checkout-api"},
		{"an environment that accepts no bumps", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "staging", Service: "checkout-api", Tag: "1.6.0"}, 403, "EnvironmentRefused", `environment "staging" accepts no bumps`},
		{"an environment the pipeline lacks", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "prod", Service: "checkout-api", Tag: "1.6.0"}, 403, "EnvironmentRefused", `environment "prod" accepts no bumps`},
		{"a fork's pull request (pull_request_target runs with the base ref)", func() string {
			return e.gh.Sign(t, nil, e.gh.ForkPullRequestClaims("acme/checkout-api", "stagehand", e.clk.now()))
		}, good, 403, "ClaimRefused", `event "pull_request_target": its runs may be started by someone without write access`},
		{"a pull_request run", func() string {
			return e.gh.Sign(t, nil, with(e.github("acme/checkout-api"), "event_name", "pull_request", "ref", "refs/pull/7/merge", "head_ref", "feature"))
		}, good, 403, "ClaimRefused", `ref "refs/pull/7/merge" is not allowed; bumpClaims.ref allows refs/heads/main`},
		{"a GitLab merge request pipeline", func() string {
			return e.gl.Sign(t, nil, with(e.gl.GitLabClaims("acme-group/checkout-api", "stagehand", e.clk.now()), "pipeline_source", "merge_request_event"))
		}, good, 403, "ClaimRefused", `event "merge_request_event": its runs may be started by someone without write access`},
		{"a workflow_run (a fork's pull request workflow may trigger it, on the default branch's ref)", func() string {
			return e.gh.Sign(t, nil, with(e.github("acme/checkout-api"), "event_name", "workflow_run", "actor", "mallory"))
		}, good, 403, "ClaimRefused", `event "workflow_run": its runs may be started by someone without write access`},
		{"an issue_comment run (anyone may comment)", func() string {
			return e.gh.Sign(t, nil, with(e.github("acme/checkout-api"), "event_name", "issue_comment", "actor", "mallory"))
		}, good, 403, "ClaimRefused", `event "issue_comment": its runs may be started`},
		{"a ref not allowed", func() string {
			return e.gh.Sign(t, nil, with(e.github("acme/checkout-api"), "ref", "refs/heads/experiment"))
		}, good, 403, "ClaimRefused", `ref "refs/heads/experiment" is not allowed`},
		{"a service the file does not define", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", Service: "checkout-admin", Tag: "1.0.0"}, 403, "UnknownService", "environments/devel/checkout-api.json defines no checkout-admin"},
		{"a container the service does not have", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", Service: "checkout-api", Container: "sidecar", Tag: "1.0.0"}, 403, "UnknownService", "defines no checkout-api/sidecar"},
		{"an unknown body key", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			`{"environment": "devel", "service": "checkout-api", "tag": "1.6.0", "repository": "acme/payments-api"}`, 400, "BadRequest", `unknown field "repository"`},
		{"no tag", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", Service: "checkout-api"}, 400, "BadRequest", "no tag"},
		{"two JSON values", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			`{"environment": "devel", "service": "checkout-api", "tag": "1"} {}`, 400, "BadRequest", "want one JSON object"},
		{"a path in the environment", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "../prod", Service: "checkout-api", Tag: "1"}, 400, "BadRequest", `environment "../prod"`},
		{"a body over 64 KiB", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			`{"environment": "devel", "service": "` + strings.Repeat("x", 70<<10) + `", "tag": "1"}`, 413, "BadRequest", "larger than 65536 bytes"},
		{"a merge wait too long", func() string { return e.gh.Sign(t, nil, e.github("acme/checkout-api")) },
			BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0", AutoMerge: true, MergeTimeout: "2h"}, 400, "BadRequest", `mergeTimeout "2h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := e.post(t, tt.token(), tt.body)
			var got BumpError
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("answer %d is not an error body: %s", code, out)
			}
			if code != tt.wantStatus || got.Reason != tt.wantReason || !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("answered %d %+v\nwant %d %s containing %q", code, got, tt.wantStatus, tt.wantReason, tt.wantError)
			}
			lg := e.lastLog()
			if lg.Status != tt.wantStatus || lg.Reason != tt.wantReason || lg.Err == nil {
				t.Errorf("log = %+v, want status %d reason %s and the error", lg, tt.wantStatus, tt.wantReason)
			}
			if tt.wantStatus == 403 && (lg.Caller == nil || lg.Caller.Repository == "") {
				t.Errorf("a refusal after verification logs no caller identity: %+v", lg)
			}
			if tt.wantStatus == 401 && tt.name != "no token" && (lg.Caller != nil || lg.Claimed == nil || lg.Claimed.Repository != "acme/checkout-api") {
				t.Errorf("a refused token logs caller %+v, claimed %+v; want no verified caller and the claimed repository", lg.Caller, lg.Claimed)
			}
		})
	}
	// Nothing was written: no branch, no file, no pull request.
	for _, route := range []struct{ method, path string }{{"PUT", "/contents/"}, {"POST", "/git/refs$"}, {"PATCH", "/git/refs/"}, {"POST", "/pulls$"}} {
		if n := e.f.Sent.Count(route.method, route.path); n != 0 {
			t.Errorf("%d %s %s requests after refusals, want none", n, route.method, route.path)
		}
	}
	if prs := e.f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 0 {
		t.Errorf("pull requests after refusals: %+v", prs)
	}
	for _, b := range []string{"stagehand/bump-devel-checkout-api", "stagehand/bump-devel-payments-api", "stagehand/bump-devel-shared-jobs", "stagehand/bump-staging-checkout-api"} {
		if sha := e.f.Srv.Repo(owner, repo).Branch(b); sha != "" {
			t.Errorf("branch %s exists after refusals", b)
		}
	}
}

func TestBumpAPIRefusesLockedEnvironment(t *testing.T) {
	e := newBumpEnv(t)
	e.f.Lock(t, "apps/devel")
	token := e.gh.Sign(t, nil, e.github("acme/checkout-api"))
	code, out := e.post(t, token, BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0", AutoMerge: true, MergeTimeout: "300ms"})
	var got BumpError
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusLocked || got.Reason != "Locked" || got.Result == nil || !got.Result.Blocked || got.Result.PR != 0 ||
		!strings.Contains(got.Result.Reason, "blocked: apps/devel is locked until") {
		t.Fatalf("bump into a locked environment answered %d: %s", code, out)
	}
	if prs := e.f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 0 {
		t.Errorf("pull requests = %+v, want none opened into a locked environment", prs)
	}

	// Unlocked, with green checks: merged within the request.
	e.f.Unlock(t, "apps/devel")
	code, out = e.post(t, e.gh.Sign(t, nil, e.github("acme/checkout-api")), BumpBody{Environment: "devel", Service: "checkout-api", Tag: "1.6.0", AutoMerge: true, MergeTimeout: "5s"})
	if code != http.StatusOK || !decodeResult(t, out).Merged {
		t.Fatalf("bump after unlock answered %d: %s", code, out)
	}
	if got := e.f.File(t, "main", checkoutFile); !strings.Contains(got, `{ "dockerTag": "1.6.0" }`) {
		t.Errorf("main after the merge:\n%s", got)
	}
}

func TestNewBumpAPIOptions(t *testing.T) {
	b, err := prbot.New(github.NewClient(nil), owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	gh := oidc.Issuer{URL: "https://token.actions.githubusercontent.com", Audience: "stagehand", Claims: oidc.ClaimsGitHub}
	for _, tt := range []struct {
		name string
		opts []Option
		want string
	}{
		{"no issuer", nil, "no trusted issuer"},
		{"http issuer", []Option{WithIssuer(oidc.Issuer{URL: "http://127.0.0.1:1", Audience: "a", Claims: oidc.ClaimsGitHub})}, "want an https:// URL"},
		{"no audience", []Option{WithIssuer(oidc.Issuer{URL: gh.URL, Claims: oidc.ClaimsGitHub})}, "no audience"},
		{"unknown claims", []Option{WithIssuer(oidc.Issuer{URL: gh.URL, Audience: "a", Claims: "circleci"})}, `claims "circleci"`},
		{"gitlab without namespaces", []Option{WithIssuer(oidc.Issuer{URL: "https://gitlab.com", Audience: "a", Claims: oidc.ClaimsGitLab})}, "gitlab issuers need namespaces"},
		{"twice", []Option{WithIssuer(gh), WithIssuer(gh)}, "trusted twice"},
		{"negative refresh", []Option{WithIssuer(gh), WithKeyRefresh(-time.Second)}, "is less than 1s"},
		{"no refresh interval", []Option{WithIssuer(gh), WithKeyRefresh(0)}, "is less than 1s"},
		{"negative bump rate", []Option{WithIssuer(gh), WithBumpRateLimit(-1, 10)}, "want a non-negative rate"},
		{"no bump burst", []Option{WithIssuer(gh), WithBumpRateLimit(1, 0)}, "a burst of at least 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewBumpAPI(b, tt.opts...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewBumpAPI = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	api, err := NewBumpAPI(b, WithIssuer(gh))
	if err != nil {
		t.Fatal(err)
	}
	is, ok := api.ver.Issuer(gh.URL)
	if !ok {
		t.Fatalf("%s not trusted", gh.URL)
	}
	if diff := cmp.Diff([]string{owner}, is.Namespaces); diff != "" {
		t.Errorf("trusted namespaces (-want +got):\n%s", diff)
	}
}
