package github_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

func TestFlowApprove(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	// GitHub is flaky while the plan is proposed and while the result is reported: retried, nothing lost.
	f.gh.Faults().Inject(githubtest.Fault{Method: "POST", Route: "/repos/{owner}/{repo}/check-runs", Status: http.StatusBadGateway, Times: 2})
	f.gh.Faults().Inject(githubtest.Fault{Method: "GET", Route: "/repos/{owner}/{repo}/commits/{ref}/check-runs", Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if !strings.Contains(run.Summary, "`1.0.0` → `1.0.1`") || !strings.HasPrefix(run.ExternalID, "sha256:") {
		t.Errorf("proposed run: external_id %q summary:\n%s", run.ExternalID, run.Summary)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied before approval: %s", f.image())
	}

	// A forged click (wrong secret) is refused with 401 and changes nothing.
	if code, _ := f.click(run.ID, "approve", "maria", "not-the-secret"); code != http.StatusUnauthorized {
		t.Errorf("bad signature: %d, want 401", code)
	}
	// Someone with write only: the run stays pending and says who may approve.
	if code, _ := f.click(run.ID, "approve", "wendy", secret); code != http.StatusOK {
		t.Errorf("unauthorised click: %d", code)
	}
	run = f.waitRun(sha, "noting the refused click", func(r githubtest.CheckRun) bool { return strings.Contains(r.Summary, "@wendy may not approve") })
	if !awaitingApproval(run) || len(run.Actions) != 2 || !strings.Contains(run.Summary, "maintain permission or higher") {
		t.Errorf("after unauthorised click: %+v", run)
	}
	time.Sleep(200 * time.Millisecond)
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied after a refused click: %s", f.image())
	}

	f.gh.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: "/repos/{owner}/{repo}/check-runs/{check_run_id}", Status: http.StatusServiceUnavailable, Times: 2})
	code, delivery := f.click(run.ID, "approve", "maria", secret)
	if code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitImage("1.0.1")
	run = f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(run.Summary, "Approved by @maria") || !strings.Contains(run.Summary, "Deployment/api") {
		t.Errorf("result summary:\n%s", run.Summary)
	}
	if n := f.gh.Faults().Left(); n != 0 {
		t.Errorf("%d injected faults never reached", n)
	}
	// A replayed delivery is dropped: nothing decided or written again.
	patches := f.gh.CountRequests("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
	if code := f.send(delivery, secret); code != http.StatusOK {
		t.Errorf("replay: %d", code)
	}
	time.Sleep(300 * time.Millisecond)
	if got := f.gh.CountRequests("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"); got != patches {
		t.Errorf("replayed delivery updated the check run (%d → %d PATCHes)", patches, got)
	}
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:maria" || h[0].Result != approval.ResultSucceeded {
		t.Errorf("history = %+v, want one success approved by maria", h)
	}
}

func TestFlowReject(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.click(run.ID, "reject", "acme", secret)
	run = f.waitRun(sha, "cancelled", concluded("cancelled"))
	if !strings.Contains(run.Title, "Rejected by @acme") {
		t.Errorf("title %q", run.Title)
	}
	if h := f.history(); len(h) != 1 || h[0].Result != approval.ResultRejected {
		t.Errorf("history = %+v", h)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("rejected plan applied: %s", f.image())
	}
}

// TestFlowRejectionWrittenOnce: a rejection click updates the check run twice, no more: in progress when
// the click is taken, cancelled when the daemon's worker reports the rejection through the gate. (The
// handler used to write the rejection a second time.)
func TestFlowRejectionWrittenOnce(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	const patch = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
	before := f.gh.CountRequests("PATCH", patch)
	f.click(run.ID, "reject", "acme", secret)
	f.waitRun(sha, "cancelled", concluded("cancelled"))
	f.stop() // the daemon and the handler's decisions have finished
	if got := f.gh.CountRequests("PATCH", patch) - before; got != 2 {
		t.Errorf("%d check-run PATCHes for one rejection, want 2 (in progress, then cancelled once)", got)
	}
}

func TestFlowSupersededCommit(t *testing.T) {
	f := newFlow(t)
	old := f.commit("1.0.1")
	f.start()
	oldRun := f.waitRun(old, "awaiting approval", awaitingApproval)
	newer := f.commit("1.0.2")
	f.trigger()
	superseded := f.waitRun(old, "neutral", concluded("neutral"))
	if !strings.Contains(superseded.Title, "Superseded by "+newer[:7]) {
		t.Errorf("old run title %q", superseded.Title)
	}
	f.waitRun(newer, "awaiting approval", awaitingApproval)
	// A click on the old run (its page was still open) applies nothing.
	f.click(oldRun.ID, "approve", "maria", secret)
	time.Sleep(300 * time.Millisecond)
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("superseded plan applied: %s", f.image())
	}
	if r, _ := f.gh.Repo(owner, repo).CheckRun(oldRun.ID); r.Conclusion != "neutral" || !strings.HasPrefix(r.Title, "Superseded by") {
		t.Errorf("old run after the click: %s/%s %q", r.Status, r.Conclusion, r.Title)
	}
}

func TestFlowStaleHash(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	// Drift: someone deploys 1.0.2 by hand, so the approved plan (1.0.0 → 1.0.1) is not what would run.
	f.setImage(f.reg.Ref("team/api", "1.0.2"))
	f.click(run.ID, "approve", "maria", secret)
	f.waitRunID(run.ID, "withdrawn", concluded("neutral"))
	fresh := f.waitRun(sha, "a fresh run awaiting approval", func(r githubtest.CheckRun) bool { return r.ID != run.ID && awaitingApproval(r) })
	if fresh.ExternalID == run.ExternalID || !strings.Contains(fresh.Summary, "`1.0.2` → `1.0.1`") {
		t.Errorf("fresh run: %q\n%s", fresh.ExternalID, fresh.Summary)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.2") {
		t.Errorf("stale plan applied: %s", f.image())
	}
}

func TestFlowRestartWithPendingApproval(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.restart()
	// Clicked at once: the new process may not have polled yet, and its first pass proposes the pending
	// plan again while the click is being decided; neither may duplicate the run.
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	if n := len(f.gh.Repo(owner, repo).CheckRuns()); n != 1 {
		t.Errorf("%d check runs, want the one proposed before the restart", n)
	}
}

func TestFlowPullRequestPreview(t *testing.T) {
	f := newFlow(t)
	f.commit("1.0.0") // main runs what the cluster runs: nothing pending
	f.start()
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.2"}]}]}`}
	head := f.git.Repo("manifests").Commit(t, "bump-api", files, "api 1.0.2")
	f.gh.Repo(owner, repo).MirrorCommit("bump-api", head, files, "api 1.0.2")
	n := f.gh.Repo(owner, repo).OpenPullRequest("bump-api", "main", "Bump api to 1.0.2", "maria")
	if code := f.send(f.gh.Webhooks(owner, repo).PullRequest(n, "opened", "maria"), secret); code != http.StatusOK {
		t.Fatalf("pull_request delivery: %d", code)
	}
	preview := f.waitPreview(head)
	if preview.Conclusion != "neutral" || !strings.Contains(preview.Summary, "`1.0.0` → `1.0.2`") || !strings.Contains(preview.Summary, "Merging this pull request") {
		t.Errorf("preview run: %s/%s %q\n%s", preview.Status, preview.Conclusion, preview.Title, preview.Summary)
	}
	if len(preview.Actions) != 0 {
		t.Errorf("a preview offers actions: %+v", preview.Actions)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("a preview applied something: %s", f.image())
	}
}

func TestFlowPlanLargerThanTheSummaryLimit(t *testing.T) {
	f := newFlow(t)
	// One real change and 600 services with no workload: each is a problem line, together well over
	// GitHub's 65,535-character summary.
	var services []string
	services = append(services, `{"name": "api", "containers": [{"dockerTag": "1.0.1"}]}`)
	for i := range 600 {
		services = append(services, fmt.Sprintf(`{"name": "ghost-%03d", "containers": [{"dockerTag": "1.0.0"}]}`, i))
	}
	files := map[string]string{"environments/prod/manifest.json": `{"services": [` + strings.Join(services, ",\n") + `]}`}
	sha := f.git.Repo("manifests").Commit(t, "main", files, "many services")
	f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "many services")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if n := len([]rune(run.Summary)); n > github.SummaryLimit || n < github.SummaryLimit-2000 {
		t.Errorf("summary has %d characters, want just under %d", n, github.SummaryLimit)
	}
	if !strings.Contains(run.Summary, "Cut to fit") || !strings.Contains(run.Summary, "https://stagehand.example.com/api/v1/environments/prod") {
		t.Errorf("cut summary does not point to the full plan; it ends:\n%s", run.Summary[len(run.Summary)-400:])
	}
	if !strings.Contains(run.Title, "1 change in 1 workload, 600 problems") {
		t.Errorf("title %q", run.Title)
	}
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	// What was approved applied; the problems were part of the approved plan and are repeated.
	done := f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(done.Summary, "600 problems") {
		t.Errorf("result summary:\n%s", done.Summary)
	}
}

func TestFlowDriftReplacesTheCheck(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	// Drift without any click: the next resync plans 1.0.2 → 1.0.1, a different plan for the same commit.
	f.setImage(f.reg.Ref("team/api", "1.0.2"))
	fresh := f.waitRun(sha, "a fresh run awaiting approval", func(r githubtest.CheckRun) bool { return r.ID != run.ID && awaitingApproval(r) })
	if !strings.Contains(fresh.Summary, "`1.0.2` → `1.0.1`") {
		t.Errorf("fresh run:\n%s", fresh.Summary)
	}
	if old, _ := f.gh.Repo(owner, repo).CheckRun(run.ID); old.Conclusion != "neutral" || old.Title != "Replaced: the plan changed" {
		t.Errorf("old run: %s/%s %q", old.Status, old.Conclusion, old.Title)
	}
	// Approving the fresh plan deploys it.
	f.click(fresh.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
}

func TestFlowApprovedOverTheAPIShowsOnTheCheck(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if _, err := f.d.Approve(context.Background(), "prod", run.ExternalID, identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "ci-deployer"}}); err != nil {
		t.Fatalf("Approve over the API: %v", err)
	}
	f.waitImage("1.0.1")
	done := f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(done.Summary, "Approved by token:ci-deployer.") || done.ID != run.ID {
		t.Errorf("run %d (proposed %d):\n%s", done.ID, run.ID, done.Summary)
	}
}

// TestFlowRejectionSticks: after a rejection on GitHub, five resyncs and a
// restart plan the same revision again and again, and the check run stays
// cancelled: no new run, no new buttons, nothing applied.
func TestFlowRejectionSticks(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.click(run.ID, "reject", "acme", secret)
	f.waitRun(sha, "cancelled", concluded("cancelled"))
	const create = "/repos/{owner}/{repo}/check-runs"
	before := f.gh.CountRequests("POST", create)
	f.waitPasses(6) // five resyncs after the one the rejection was taken in
	f.stop()
	f.start()
	f.waitPasses(5)
	if got := f.gh.CountRequests("POST", create) - before; got != 0 {
		t.Errorf("%d check runs created after the rejection, want 0", got)
	}
	if r, _ := f.gh.Repo(owner, repo).CheckRun(run.ID); r.Status != "completed" || r.Conclusion != "cancelled" {
		t.Errorf("the rejected run is %s/%s, want completed/cancelled", r.Status, r.Conclusion)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("rejected plan applied: %s", f.image())
	}
}
