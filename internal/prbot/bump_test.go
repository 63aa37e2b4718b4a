package prbot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

const checkoutFile = "environments/devel/checkout-api.json"

// checkoutJSON is an owned file with two services and unusual-but-valid
// formatting (two-space indent, inline container) the editor must keep.
const checkoutJSON = `{
  "services": [
    {
      "name": "checkout-api",
      "version": "1.5.0",
      "containers": [
        { "dockerTag": "1.5.0" },
        {
          "dockerName": "checkout-worker",
          "dockerTag": "1.5.0"
        }
      ]
    },
    {
      "name": "checkout-cron",
      "containers": [{"dockerTag": "0.3.0"}]
    }
  ]
}
`

func devel() map[string]string {
	return map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "includes": ["./checkout-api.json"]}` + "\n",
		checkoutFile:                       checkoutJSON,
		"pipeline.yaml":                    "stages:\n  - name: devel\n    lockPath: apps/devel\n  - name: staging\n    promoteFrom: devel\n",
	}
}

func TestBumpOpensUpdatesAndIsIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	baseBefore := f.Srv.Repo(owner, repo).Branch("main")
	req := BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}

	// A new bump opens a pull request whose diff is the one tag line.
	res, err := b.Bump(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	branch := "stagehand/bump-devel-checkout-api"
	want := &BumpResult{File: checkoutFile, Branch: branch, PR: 1, URL: res.URL, Commit: f.Srv.Repo(owner, repo).Branch(branch), Changed: true, Created: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("first bump (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(res.URL, "/acme/manifests/pull/1") {
		t.Errorf("URL = %q, want the pull request's html URL", res.URL)
	}
	if got := f.Srv.Repo(owner, repo).Branch("main"); got != baseBefore {
		t.Errorf("the base branch moved: %s → %s", baseBefore, got)
	}
	if diff := cmp.Diff([]string{`-        { "dockerTag": "1.5.0" },`, `+        { "dockerTag": "1.6.0" },`},
		changedLines(t, checkoutJSON, f.File(t, branch, checkoutFile))); diff != "" {
		t.Errorf("diff of the bump (-want +got):\n%s", diff)
	}
	prs := f.OpenPulls()
	if len(prs) != 1 || prs[0].Head != branch || prs[0].Base != "main" {
		t.Fatalf("open pull requests = %+v, want one from %s into main", prs, branch)
	}
	if want := "Bump checkout-api.json in devel: checkout-api 1.6.0"; prs[0].Title != want {
		t.Errorf("title = %q, want %q", prs[0].Title, want)
	}

	// A newer bump of another container with a digest updates the same pull request.
	digest := "sha256:" + strings.Repeat("ab", 32)
	res2, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Container: "checkout-worker", Tag: "1.6.1", Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	if res2.PR != 1 || res2.Created || !res2.Changed {
		t.Errorf("second bump = %+v, want PR 1 updated in place", res2)
	}
	got := f.File(t, branch, checkoutFile)
	wantFile := strings.Replace(strings.Replace(checkoutJSON, `{ "dockerTag": "1.5.0" }`, `{ "dockerTag": "1.6.0" }`, 1),
		`          "dockerTag": "1.5.0"
`, `          "dockerTag": "1.6.1",
          "dockerDigest": "`+digest+`"
`, 1)
	if diff := cmp.Diff(wantFile, got); diff != "" {
		t.Errorf("file after two bumps (-want +got):\n%s", diff)
	}
	prs = f.OpenPulls()
	if len(prs) != 1 || prs[0].Title != "Bump checkout-api.json in devel: checkout-api 1.6.0, checkout-api/checkout-worker 1.6.1" {
		t.Errorf("open pull requests = %+v, want PR 1 retitled for both bumps", prs)
	}
	if !strings.Contains(prs[0].Body, digest) {
		t.Errorf("body does not show the digest:\n%s", prs[0].Body)
	}

	// The same bump again writes nothing and touches nothing.
	head := f.Srv.Repo(owner, repo).Branch(branch)
	puts := f.Sent.Count("PUT", "/contents/")
	patches := f.Sent.Count("PATCH", "/pulls/[0-9]+$")
	res3, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Container: "checkout-worker", Tag: "1.6.1", Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	if res3.Changed || res3.Commit != "" || res3.PR != 1 || res3.Created {
		t.Errorf("identical re-run = %+v, want no change on PR 1", res3)
	}
	if f.Srv.Repo(owner, repo).Branch(branch) != head {
		t.Error("identical re-run moved the branch")
	}
	if n := f.Sent.Count("PUT", "/contents/"); n != puts {
		t.Errorf("identical re-run wrote %d files", n-puts)
	}
	if n := f.Sent.Count("PATCH", "/pulls/[0-9]+$"); n != patches {
		t.Errorf("identical re-run edited the pull request %d times", n-patches)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 1 {
		t.Errorf("%d pull requests, want 1", n)
	}
}

func TestBumpOwnershipDefaultsAndErrors(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	tests := []struct {
		name string
		req  BumpRequest
		want string
	}{
		{"missing file", BumpRequest{Env: "devel", File: "payments-api.json", Service: "payments-api", Tag: "1.0.0"},
			"bumping environments/devel/payments-api.json: the file does not exist on main"},
		{"bad env", BumpRequest{Env: "../prod", File: "x.json", Service: "x", Tag: "1"}, `environment "../prod"`},
		{"bad file", BumpRequest{Env: "devel", File: "x.yaml", Service: "x", Tag: "1"}, `file "x.yaml"`},
		{"bad tag", BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "-bad"}, "environments/devel/checkout-api.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Bump(ctx, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Bump error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestBumpAddsServiceAndOlderTagDoesNotWin(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	if _, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.7.0"}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.9"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || !strings.Contains(res.Reason, "newer than 1.6.9") {
		t.Errorf("older bump = %+v, want no change because 1.7.0 is newer", res)
	}
	res, err = b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-events", Tag: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	got := f.File(t, "stagehand/bump-devel-checkout-api", checkoutFile)
	if !res.Changed || !strings.Contains(got, `"name": "checkout-events"`) || !strings.Contains(got, `"dockerTag": "1.7.0"`) {
		t.Errorf("after adding a service (%+v) the file is:\n%s", res, got)
	}
}

func TestRacingBumpsEndInOnePullRequestWithTheNewestTag(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	f.Srv.Faults().SetLatency(2 * time.Millisecond) // widen the windows between read and write
	const racers = 6
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := f.bot(t)
			_, errs[i] = b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: fmt.Sprintf("2.0.%d", i)})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("racer %d: %v", i, err)
		}
	}
	prs := f.Srv.Repo(owner, repo).PullRequests()
	if len(prs) != 1 || prs[0].State != "open" {
		t.Fatalf("pull requests = %+v, want exactly one open", prs)
	}
	got := f.File(t, prs[0].Head, checkoutFile)
	if diff := cmp.Diff([]string{`-        { "dockerTag": "1.5.0" },`, fmt.Sprintf(`+        { "dockerTag": "2.0.%d" },`, racers-1)}, changedLines(t, checkoutJSON, got)); diff != "" {
		t.Errorf("racing bumps left (-want +got):\n%s", diff)
	}
	if want := fmt.Sprintf("Bump checkout-api.json in devel: checkout-api 2.0.%d", racers-1); prs[0].Title != want {
		t.Errorf("title = %q, want %q", prs[0].Title, want)
	}
}

func TestBumpAutoMergeWaitsForChecksAndLocks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t, WithRequiredChecks("ci/test"))
	type outcome struct {
		res *BumpResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0", AutoMerge: true, MergeTimeout: time.Minute})
		done <- outcome{res, err}
	}()

	// Locked after the pull request was opened: the bot says why on it and does not merge.
	testenv.WaitFor(t, 20*time.Second, "the bump pull request", func() bool { return len(f.Srv.Repo(owner, repo).PullRequests()) == 1 })
	f.Lock(t, "apps/devel")
	testenv.WaitFor(t, 20*time.Second, "the lock comment", func() bool {
		for _, c := range f.Srv.Repo(owner, repo).Comments(1) {
			if strings.Contains(c.Body, "apps/devel is locked") {
				return true
			}
		}
		return false
	})
	f.Unlock(t, "apps/devel")
	// Unlocked but the required check has not reported: still waiting.
	polls := f.Sent.Count("GET", "/check-runs$")
	testenv.WaitFor(t, 20*time.Second, "more polls", func() bool {
		return f.Sent.Count("GET", "/check-runs$") >= polls+3
	})
	if prs := f.Srv.Repo(owner, repo).PullRequests(); prs[0].Merged {
		t.Fatal("merged before the required check succeeded")
	}
	head := f.Srv.Repo(owner, repo).PullRequests()[0].HeadSHA
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: "ci/test", HeadSHA: head, Status: "in_progress"})
	polls = f.Sent.Count("GET", "/check-runs$")
	testenv.WaitFor(t, 20*time.Second, "more polls", func() bool {
		return f.Sent.Count("GET", "/check-runs$") >= polls+3
	})
	if prs := f.Srv.Repo(owner, repo).PullRequests(); prs[0].Merged {
		t.Fatal("merged while the required check was in progress")
	}
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: "ci/test", HeadSHA: head, Status: "completed", Conclusion: "success", CompletedAt: time.Now()})

	var out outcome
	select {
	case out = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("auto-merge did not finish")
	}
	if out.err != nil {
		t.Fatal(out.err)
	}
	if !out.res.Merged {
		t.Fatalf("result = %+v, want merged", out.res)
	}
	if got := f.File(t, "main", checkoutFile); !strings.Contains(got, `{ "dockerTag": "1.6.0" }`) {
		t.Errorf("main after the merge:\n%s", got)
	}
	if f.Srv.Repo(owner, repo).Branch("stagehand/bump-devel-checkout-api") != "" {
		t.Error("the bump branch was not deleted after merging")
	}

	// The next bump starts a fresh pull request.
	res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.PR != 2 {
		t.Errorf("bump after merge = %+v, want new PR 2", res)
	}
}

func TestBumpAutoMergeGivesUpOnFailedChecks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	if _, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}); err != nil {
		t.Fatal(err)
	}
	head := f.Srv.Repo(owner, repo).PullRequests()[0].HeadSHA
	f.Srv.Repo(owner, repo).SetStatus(head, "ci/lint", "failure")
	res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0", AutoMerge: true, MergeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged || res.Reason != "checks failed: ci/lint (failure)" {
		t.Errorf("result = %+v, want not merged because ci/lint failed", res)
	}
}

func TestBumpAfterARejectedPullRequestStartsOver(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	if _, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "9.9.9"}); err != nil {
		t.Fatal(err)
	}
	// A person closes the pull request without merging; the branch stays.
	if _, _, err := f.GH.PullRequests.Edit(ctx, owner, repo, 1, &github.PullRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-cron", Tag: "0.4.0"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.PR != 2 {
		t.Errorf("result = %+v, want a new PR 2", res)
	}
	// Only the new bump: the rejected 9.9.9 is gone.
	if diff := cmp.Diff([]string{`-      "containers": [{"dockerTag": "0.3.0"}]`, `+      "containers": [{"dockerTag": "0.4.0"}]`},
		changedLines(t, checkoutJSON, f.File(t, res.Branch, checkoutFile))); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
}

func TestBumpStaysMergeableWhenTheBaseEditsTheFile(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, devel())
	b := f.bot(t)
	if _, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}); err != nil {
		t.Fatal(err)
	}
	// Someone edits another service of the same file on main meanwhile.
	edited := strings.Replace(checkoutJSON, `"0.3.0"`, `"0.3.1"`, 1)
	f.Srv.Repo(owner, repo).Commit("main", map[string]string{checkoutFile: edited}, "hotfix checkout-cron")

	res, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Container: "checkout-worker", Tag: "1.6.1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.PR != 1 || res.Created {
		t.Fatalf("result = %+v, want PR 1 updated", res)
	}
	// The branch holds both bumps on top of the hotfix, so it merges cleanly.
	got := f.File(t, res.Branch, checkoutFile)
	if diff := cmp.Diff([]string{
		`-        { "dockerTag": "1.5.0" },`, `+        { "dockerTag": "1.6.0" },`,
		`-          "dockerTag": "1.5.0"`, `+          "dockerTag": "1.6.1"`,
	}, changedLines(t, edited, got)); diff != "" {
		t.Errorf("branch vs main (-want +got):\n%s", diff)
	}
	if _, _, err := f.GH.PullRequests.Merge(ctx, owner, repo, 1, "", nil); err != nil {
		t.Fatalf("merging: %v", err)
	}
	if main := f.File(t, "main", checkoutFile); main != got {
		t.Errorf("main after the merge:\n%s\nwant:\n%s", main, got)
	}
}
