package bot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestPrbotBumpWait: `prbot bump --wait` on githubtest, a real git server
// and a real daemon (clitest.WaitWorld): exit 0 once the test merged the pull
// request (squashed onto the git server the daemon reads) and devel
// deployed web at the tag; 1 when the pull request is closed without
// merging; 2 when it stays open past --timeout.
func TestPrbotBumpWait(t *testing.T) {
	base, git, _ := clitest.WaitWorld(t, cluster.Env(t))
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	const file = "environments/devel/manifest.json"
	gh.Repo("acme", "manifests").Commit("main", map[string]string{
		file: `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "seed")
	environ := map[string]string{"GITHUB_TOKEN": gh.Token(), "GITHUB_API_URL": gh.URL()}
	bump := func(tag string, args ...string) (string, string, int) {
		return runPrbot(t, environ, append([]string{"bump", "--repo", "acme/manifests", "--env", "devel", "--service", "web", "--tag", tag, "--file", "manifest.json",
			"--wait", "--server", base[2], "--server-token-file", base[4], "--interval", "100ms"}, args...)...)
	}
	// openPR waits for the open bump pull request asking for tag.
	openPR := func(tag string) githubtest.PullRequest {
		var pr githubtest.PullRequest
		testenv.WaitFor(t, 30*time.Second, "the bump pull request for "+tag, func() bool {
			for _, p := range gh.Repo("acme", "manifests").PullRequests() {
				if got, _ := gh.Repo("acme", "manifests").File(p.Head, file); p.State == "open" && strings.Contains(got, tag) {
					pr = p
					return true
				}
			}
			return false
		})
		return pr
	}
	type result struct {
		out, errOut string
		code        int
	}
	start := func(tag string, args ...string) chan result {
		done := make(chan result, 1)
		go func() { o, e, c := bump(tag, args...); done <- result{o, e, c} }()
		return done
	}

	// Merged (squashed: the merge commit is made on the git server the
	// daemon reads, and recorded on GitHub), then deployed.
	done := start("3.0.0", "--timeout", "90s")
	pr := openPR("3.0.0")
	content, _ := gh.Repo("acme", "manifests").File(pr.Head, file)
	sha := git.Repo("manifests").Commit(t, "main", map[string]string{file: content}, "web 3.0.0 (#1)")
	gh.Repo("acme", "manifests").MirrorCommit("main", sha, map[string]string{file: content}, "web 3.0.0 (#1)")
	gh.Repo("acme", "manifests").RecordMerge(pr.Number, sha, "alice")
	if r := <-done; r.code != 0 || !strings.Contains(r.out, "merged as "+sha[:7]) || !strings.Contains(r.out, "web=3.0.0 at") {
		t.Errorf("bump --wait, merged and deployed: exit %d, want 0\n%s%s", r.code, r.out, r.errOut)
	}

	// Closed without merging.
	done = start("4.0.0", "--timeout", "90s")
	pr = openPR("4.0.0")
	client, err := github.NewClient(nil).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.PullRequests.Edit(context.Background(), "acme", "manifests", pr.Number, &github.PullRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 1 || !strings.Contains(r.errOut, "closed without merging") {
		t.Errorf("bump --wait, closed unmerged: exit %d, want 1 saying closed without merging\n%s%s", r.code, r.out, r.errOut)
	}

	// Open past the timeout; with -o json stdout holds only the result,
	// the progress lines go to stderr.
	out, errOut, code := bump("5.0.0", "--timeout", "1s", "-o", "json")
	var res prbot.BumpResult
	if err := json.Unmarshal([]byte(out), &res); code != 2 || err != nil || res.PR == 0 || !strings.Contains(errOut, "timed out") || !strings.Contains(errOut, "waiting for it to merge") {
		t.Errorf("bump --wait -o json, pull request left open: exit %d, want 2 (stdout a result: %v)\nstdout %q\nstderr %q", code, err, out, errOut)
	}
	if v := gh.TakeViolations(); len(v) > 0 {
		t.Errorf("GitHub API violations: %v", v)
	}
}
