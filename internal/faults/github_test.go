package faults

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

const checkRuns, checkRun = "/repos/{owner}/{repo}/check-runs", "/repos/{owner}/{repo}/check-runs/{check_run_id}"

// TestGitHubErrorsAndRateLimits: GitHub answers the check-run calls of a
// skipConfirmation apply with 500s, a 429 with Retry-After, and a secondary
// rate limit (403 with Retry-After). The client retries, waiting as told;
// the check run ends success; the requests are the faults plus the calls
// themselves, no storm; the retries are counted in
// stagehand_github_retries_total.
//
// A 500 is retried like a 502 (GitHub's advice); an outcome whose check-run
// call still fails after every retry is logged and not reported again.
func TestGitHubErrorsAndRateLimits(t *testing.T) {
	const n = 3
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n")} {
		if err := os.WriteFile(filepath.Join(f.dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.config["github"] = map[string]any{"apiURL": gh.URL(), "owner": "acme", "repo": "manifests",
		"webhookSecretFile": filepath.Join(f.dir, "hook"),
		"app":               map[string]any{"appID": gh.App().ID(), "installationID": gh.App().InstallationID(), "privateKeyFile": filepath.Join(f.dir, "app.pem")}}
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })

	const wait = 2 * time.Second
	gh.Faults().Inject(githubtest.Fault{Method: http.MethodPost, Route: checkRuns, Status: http.StatusInternalServerError})
	gh.Faults().Inject(githubtest.Fault{Method: http.MethodPost, Route: checkRuns, Status: http.StatusBadGateway})
	gh.Faults().Inject(githubtest.Fault{Method: http.MethodPost, Route: checkRuns, Status: http.StatusTooManyRequests, RetryAfter: wait})
	gh.Faults().Inject(githubtest.Fault{Method: http.MethodPost, Route: checkRuns, Status: http.StatusForbidden, RetryAfter: wait})
	files := manifest(n, "2.0.0")
	rev := f.git.Repo("manifests").Commit(t, "main", files, "to 2.0.0")
	gh.Repo("acme", "manifests").MirrorCommit("main", rev, files, "to 2.0.0")
	pushed := time.Now()

	f.applied(t, a, n, "2.0.0", rev, 2*time.Minute)
	var run githubtest.CheckRun
	testenv.WaitFor(t, time.Minute, "the check run of "+rev[:8]+" completed", func() bool {
		for _, r := range gh.Repo("acme", "manifests").CheckRuns() {
			if r.HeadSHA == rev && r.Name == "stagehand/devel" && r.Status == "completed" {
				run = r
				return true
			}
		}
		return false
	})
	took := time.Since(pushed)
	if run.Conclusion != "success" {
		t.Errorf("check run %q of %s ended %s, want success", run.Name, rev[:8], run.Conclusion)
	}
	if left := gh.Faults().Left(); left != 0 {
		t.Errorf("%d injected faults never reached: the client did not call as expected", left)
	}
	if took < 2*wait {
		t.Errorf("the check run completed %s after the push, before the two Retry-After waits (%s) passed", took, 2*wait)
	}
	var runsOfRev int
	for _, r := range gh.Repo("acme", "manifests").CheckRuns() {
		if r.HeadSHA == rev && r.Name == "stagehand/devel" {
			runsOfRev++
		}
	}
	if runsOfRev != 1 {
		t.Errorf("%d check runs stagehand/devel on %s, want 1", runsOfRev, rev[:8])
	}
	// Four faults and the call that succeeds; more is a storm. githubtest
	// records a request when its answer is written, a moment after the run it
	// created is visible: wait for the fifth before counting.
	testenv.WaitFor(t, 30*time.Second, "the fifth POST check-runs recorded", func() bool {
		return gh.CountRequests(http.MethodPost, checkRuns) >= 4+1
	})
	if posts, patches := gh.CountRequests(http.MethodPost, checkRuns), gh.CountRequests(http.MethodPatch, checkRun); posts != 4+1 || patches > 1 {
		t.Errorf("requests: %d POST check-runs, want 5 (4 faults, then the run); %d PATCH check-run", posts, patches)
	}
	for reason, want := range map[string]float64{"unavailable": 2, "rate_limited": 2} {
		name := `stagehand_github_retries_total{reason="` + reason + `"}`
		if got := a.metric(ctx, name); got != want {
			t.Errorf("%s = %v, want %v (500 and 502 unavailable; 429 and the secondary limit rate_limited)", name, got, want)
		}
	}
	// The budget gauge follows GitHub's X-RateLimit headers: the limit,
	// and what was left after the last answer the replica read.
	limit, left, used := a.metric(ctx, "stagehand_github_rate_limit"), a.metric(ctx, "stagehand_github_rate_limit_remaining"), gh.Faults().RateLimitUsed()
	if limit != githubtest.DefaultRateLimit || left >= limit || left < float64(githubtest.DefaultRateLimit-used) {
		t.Errorf("stagehand_github_rate_limit %v, _remaining %v; want %d and between %d (GitHub counted %d requests) and the limit",
			limit, left, githubtest.DefaultRateLimit, githubtest.DefaultRateLimit-used, used)
	}
	if v := gh.TakeViolations(); len(v) > 0 {
		t.Errorf("requests GitHub's API description refuses: %v", v)
	}
	table.add(t, row{fault: "4 GitHub 500, 502, 429 Retry-After, secondary rate limit", survived: true, recover: took,
		note: "check run success, no storm; seconds from push to the check run completed"})
}
