package github_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// TestFlowSequenceGatesPromotion: prod runs [approval, deployment, test,
// release] on the real daemon with the GitHub gate; prbot promotes prod →
// later against the same GitHub. While the sequence's test task passes, the
// check run succeeds once the whole sequence ran and the promotion pull
// request opens; when a newer revision's test task fails, the check run
// fails with the task's message and nothing newer is promoted, with the
// reason.
func TestFlowSequenceGatesPromotion(t *testing.T) {
	ctx := context.Background()
	f := newFlow(t)
	result := make(chan sequence.Result, 2)
	f.opts = []daemon.Option{daemon.WithTask(promote.TaskTest, func(ctx context.Context, r sequence.Request) (sequence.Result, error) {
		select {
		case res := <-result:
			return res, nil
		case <-ctx.Done():
			return sequence.Result{}, ctx.Err()
		}
	})}
	pipeline := "stages:\n  - name: prod\n    sequence: [approval, deployment, {name: test, properties: {suite: smoke}}, release]\n" +
		"  - name: later\n    triggeredOn: prod.delivery.finished\n"
	commit := func(tag string) string {
		files := map[string]string{
			"pipeline.yaml":                    pipeline,
			"environments/prod/manifest.json":  `{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag + `"}]}]}`,
			"environments/later/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.0"}]}]}`,
		}
		sha := f.git.Repo("manifests").Commit(t, "main", files, "api "+tag)
		f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "api "+tag)
		return sha
	}
	client, err := gh.NewClient(f.gh.Client()).WithAuthToken(f.gh.Token()).WithEnterpriseURLs(f.gh.URL(), f.gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(client, owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	approve := func(sha string) {
		t.Helper()
		run := f.waitRun(sha, "awaiting approval", awaitingApproval)
		if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
	}

	sha := commit("1.0.1")
	f.start()
	approve(sha)
	result <- sequence.Result{Result: promote.ResultPass, Message: "smoke suite passed"}
	f.waitRun(sha, "success", concluded("success"))
	res, err := bot.Promote(ctx, "prod", "later", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != prbot.ActionOpened || len(res.Decision.Changes) != 1 || res.Decision.Changes[0].Containers[0].ToTag != "1.0.1" {
		t.Fatalf("promotion after a passed sequence: %s (%s), changes %+v; want a pull request promoting api 1.0.1", res.Action, res.Reason, res.Decision.Changes)
	}

	sha2 := commit("1.0.2")
	f.trigger()
	approve(sha2)
	result <- sequence.Result{Result: promote.ResultFail, Message: "smoke suite: 3 of 40 failed"}
	run := f.waitRun(sha2, "failure", concluded("failure"))
	if !strings.Contains(run.Summary, "smoke suite: 3 of 40 failed") {
		t.Errorf("failed run's summary lacks the task's message:\n%s", run.Summary)
	}
	res, err = bot.Promote(ctx, "prod", "later", false)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, h := range res.Decision.Held {
		held = append(held, h.Reason)
	}
	if len(res.Decision.Changes) != 1 || res.Decision.Changes[0].Containers[0].ToTag != "1.0.1" ||
		!strings.Contains(strings.Join(held, "; "), "newer versions at "+sha2[:7]+" are not healthy yet") {
		t.Errorf("promotion after a failed sequence: changes %+v, held %v; want 1.0.1 still, 1.0.2 held as not healthy", res.Decision.Changes, held)
	}
}

// TestFlowReleaseApproval: prod runs [deployment, test, approval, release]
// on the real daemon with the GitHub gate. The plan is approved by a click
// (prod asks before it applies), deployed and verified; then its own
// check run awaits the release approval again, with the Approve and Reject
// buttons, and promotion waits for it. A click on Approve releases it: the
// run succeeds and the promotion pull request opens. For the next revision
// a click on Reject fails the deploy: the run fails saying who rejected it,
// and nothing newer is promoted.
func TestFlowReleaseApproval(t *testing.T) {
	ctx := context.Background()
	f := newFlow(t)
	f.opts = []daemon.Option{daemon.WithTask(promote.TaskTest, func(context.Context, sequence.Request) (sequence.Result, error) {
		return sequence.Result{Result: promote.ResultPass, Message: "smoke suite passed"}, nil
	})}
	pipeline := "stages:\n  - name: prod\n    sequence: [deployment, {name: test, properties: {suite: smoke}}, approval, release]\n" +
		"  - name: later\n    triggeredOn: prod.delivery.finished\n"
	commit := func(tag string) string {
		files := map[string]string{
			"pipeline.yaml":                    pipeline,
			"environments/prod/manifest.json":  `{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag + `"}]}]}`,
			"environments/later/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.0"}]}]}`,
		}
		sha := f.git.Repo("manifests").Commit(t, "main", files, "api "+tag)
		f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "api "+tag)
		return sha
	}
	client, err := gh.NewClient(f.gh.Client()).WithAuthToken(f.gh.Token()).WithEnterpriseURLs(f.gh.URL(), f.gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(client, owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	deployAndVerify := func(sha, tag string) githubtest.CheckRun {
		t.Helper()
		run := f.waitRun(sha, "awaiting approval", awaitingApproval)
		if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
		f.waitImage(tag)
		release := f.waitRun(sha, "awaiting release approval", awaitingRelease)
		if release.ID != run.ID {
			t.Errorf("the release approval is on run %d, want the plan's run %d", release.ID, run.ID)
		}
		return release
	}

	sha := commit("1.0.1")
	f.start()
	release := deployAndVerify(sha, "1.0.1")
	res, err := bot.Promote(ctx, "prod", "later", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action == prbot.ActionOpened || len(res.Decision.Changes) != 0 {
		t.Fatalf("promotion before the release: %s, changes %+v; want nothing promoted", res.Action, res.Decision.Changes)
	}
	// Decided a second or more after the wait began: requires.soak counts
	// from the run's completion, which must be the release, not the wait.
	time.Sleep(1100 * time.Millisecond)
	clicked := time.Now().UTC().Truncate(time.Second)
	if code, _ := f.click(release.ID, github.ActionReleaseApprove, "maria", secret); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	if done := f.waitRun(sha, "success", concluded("success")); done.CompletedAt.Before(clicked) {
		t.Errorf("the released run completed at %s, before the release at %s: soak would count from the wait", done.CompletedAt, clicked)
	}
	res, err = bot.Promote(ctx, "prod", "later", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != prbot.ActionOpened || len(res.Decision.Changes) != 1 || res.Decision.Changes[0].Containers[0].ToTag != "1.0.1" {
		t.Fatalf("promotion after the release: %s (%s), changes %+v; want a pull request promoting api 1.0.1", res.Action, res.Reason, res.Decision.Changes)
	}
	if h, err := f.d.History(ctx, "prod"); err != nil || len(h) == 0 || h[0].ReleasedBy != "github:maria" {
		t.Errorf("history %+v (%v); want the apply released by maria", h, err)
	}

	sha2 := commit("1.0.2")
	f.trigger()
	release = deployAndVerify(sha2, "1.0.2")
	if code, _ := f.click(release.ID, github.ActionReleaseReject, "maria", secret); code != http.StatusOK {
		t.Fatalf("reject: %d", code)
	}
	run := f.waitRun(sha2, "failure", concluded("failure"))
	if !strings.Contains(run.Summary, "rejected by github:maria") {
		t.Errorf("rejected run's summary does not say who rejected the release:\n%s", run.Summary)
	}
	res, err = bot.Promote(ctx, "prod", "later", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Decision.Changes {
		if c.Containers[0].ToTag == "1.0.2" {
			t.Errorf("promotion after a rejected release promotes %+v", c)
		}
	}
}
