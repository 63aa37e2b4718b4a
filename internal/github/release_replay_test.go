package github_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// releaseFlow is a flow whose prod runs [deployment, test, approval, release] (the test task passes), with
// prod needing required approvals, for the plan and for its release.
func releaseFlow(t *testing.T, required int) (*flow, func(tag string) string) {
	t.Helper()
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "maintain")
	e := f.cfg.Environments["prod"]
	e.Approvals.Required = required
	f.cfg.Environments["prod"] = e
	f.opts = []daemon.Option{daemon.WithTask(promote.TaskTest, func(context.Context, sequence.Request) (sequence.Result, error) {
		return sequence.Result{Result: promote.ResultPass, Message: "smoke suite passed"}, nil
	})}
	pipeline := "stages:\n  - name: prod\n    sequence: [deployment, {name: test, properties: {suite: smoke}}, approval, release]\n"
	commit := func(tag string) string {
		files := map[string]string{
			"pipeline.yaml":                   pipeline,
			"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag + `"}]}]}`,
		}
		sha := f.git.Repo("manifests").Commit(t, "main", files, "api "+tag)
		f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "api "+tag)
		return sha
	}
	return f, commit
}

func awaitingRelease(r githubtest.CheckRun) bool {
	return awaitingApproval(r) && strings.Contains(r.Title, "release approval") && len(r.Actions) == 2
}

// replicas starts two replicas electing one leader and returns the leader and the standby.
func (f *flow) replicas() (leader, standby *replica) {
	f.t.Helper()
	le := daemon.LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond}
	a := f.startReplica(le)
	deadline := time.Now().Add(30 * time.Second)
	for !a.d.Leading() {
		if time.Now().After(deadline) {
			f.t.Fatal("the first replica never leads")
		}
		time.Sleep(20 * time.Millisecond)
	}
	b := f.startReplica(le)
	f.d, f.hookURL = a.d, a.hookURL
	return a, b
}

// pendingRelease is prod's pending release as the state holds it: its approvers, or fails the test when
// none is pending.
func (f *flow) pendingRelease() []string {
	f.t.Helper()
	st, err := f.d.Store().Load(context.Background(), "prod")
	if err != nil {
		f.t.Fatal(err)
	}
	if st.Pending == nil || !st.Pending.Release || st.Sequence == nil || !st.Sequence.AwaitingRelease() {
		f.t.Fatalf("prod's release is no longer pending: pending %+v, sequence %+v", st.Pending, st.Sequence)
	}
	return st.Pending.Approvers()
}

// TestFlowReplayedPlanClickDuringRelease: maria's click that approved prod's plan is delivered again while
// the plan, applied and verified, waits for its release approval: under a new delivery ID to the same
// process, under its own ID to the other replica, and to a process started after the first stopped. Each
// time the handler reports the click ignored, for another decision than the run awaits now (the run's
// external_id names the release), nothing is counted, and the run is not touched. The release is decided
// only by a click on the run's release button.
func TestFlowReplayedPlanClickDuringRelease(t *testing.T) {
	f, commit := releaseFlow(t, 1)
	sha := commit("1.0.1")
	leader, standby := f.replicas()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	code, click := f.click(run.ID, "approve", "maria", secret)
	if code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitImage("1.0.1")
	release := f.waitRun(sha, "awaiting release approval", awaitingRelease)
	if release.ExternalID != github.ReleaseExternalID(run.ExternalID) {
		t.Errorf("the release's run has external_id %q, want %q: the plan's decision and the release's must differ", release.ExternalID, github.ReleaseExternalID(run.ExternalID))
	}

	replay := func(name, hookURL string, d githubtest.Delivery) {
		t.Helper()
		ignored := f.reported.count("the click was for decision")
		f.hookURL = hookURL
		if code := f.send(d, secret); code != http.StatusOK {
			t.Fatalf("%s: replay answered %d", name, code)
		}
		// The webhook is answered once the click was checked: the report, if any, is there now.
		if got := f.reported.count("the click was for decision"); got != ignored+1 {
			t.Errorf("%s: %d more reports of a click for another decision, want 1", name, got-ignored)
		}
		if got, _ := f.gh.Repo(owner, repo).CheckRun(release.ID); got.Updates != release.Updates || !awaitingRelease(got) {
			t.Errorf("%s: the release's run was changed (%d updates, was %d): %+v", name, got.Updates, release.Updates, got)
		}
		if got := f.pendingRelease(); len(got) != 0 {
			t.Errorf("%s: release approvals %v, want none", name, got)
		}
	}
	again := click
	again.ID += "-again"
	replay("in the same process, under a new delivery ID", leader.hookURL, again)
	replay("on the other replica", standby.hookURL, click)
	leader.stop()
	f.d = standby.d
	restarted := f.startReplica(daemon.LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond})
	replay("after a restart", restarted.hookURL, click)

	f.hookURL = restarted.hookURL
	if code, _ := f.click(release.ID, github.ActionReleaseApprove, "maria", secret); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	f.waitRunID(release.ID, "success", concluded("success"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := f.history()
		if len(h) > 0 && h[0].ReleasedBy == "github:maria" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %+v: want the apply released by maria", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFlowReleaseClickDeliveredTwice: prod needs two approvers. maria's click on the release button is
// delivered to the leader and counted; the same delivery then reaches the other replica, and its body
// again under another delivery ID: both are reported as handled before, and neither counts, touches the
// run or starts anything. mark's click then releases it, approved by both.
func TestFlowReleaseClickDeliveredTwice(t *testing.T) {
	f, commit := releaseFlow(t, 2)
	sha := commit("1.0.1")
	leader, standby := f.replicas()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	for _, who := range []string{"maria", "mark"} {
		if code, _ := f.click(run.ID, "approve", who, secret); code != http.StatusOK {
			t.Fatalf("approve by %s: %d", who, code)
		}
		if who == "maria" {
			run = f.waitRunID(run.ID, "counting maria", func(r githubtest.CheckRun) bool { return awaitingApproval(r) && strings.Contains(r.Title, "1 of 2") })
		}
	}
	f.waitImage("1.0.1")
	release := f.waitRun(sha, "awaiting release approval", awaitingRelease)

	code, click := f.click(release.ID, github.ActionReleaseApprove, "maria", secret)
	if code != http.StatusOK {
		t.Fatalf("release by maria: %d", code)
	}
	counted := f.waitRunID(release.ID, "counting maria's release approval", func(r githubtest.CheckRun) bool {
		return awaitingRelease(r) && strings.Contains(r.Title, "1 of 2")
	})
	if diff := cmp.Diff([]string{"github:maria"}, f.pendingRelease()); diff != "" {
		t.Fatalf("release approvals (-want +got):\n%s", diff)
	}
	again := click
	again.ID += "-again"
	for _, tc := range []struct {
		name    string
		hookURL string
		d       githubtest.Delivery
	}{
		{"the same delivery on the other replica", standby.hookURL, click},
		{"its body under another delivery ID", leader.hookURL, again},
	} {
		before := f.reported.count("was handled before")
		f.hookURL = tc.hookURL
		if code := f.send(tc.d, secret); code != http.StatusOK {
			t.Fatalf("%s: answered %d", tc.name, code)
		}
		if got := f.reported.count("was handled before"); got != before+1 {
			t.Errorf("%s: %d more reports of a delivery handled before, want 1", tc.name, got-before)
		}
		if got, _ := f.gh.Repo(owner, repo).CheckRun(release.ID); got.Updates != counted.Updates {
			t.Errorf("%s: the release's run was changed (%d updates, was %d): %+v", tc.name, got.Updates, counted.Updates, got)
		}
		if diff := cmp.Diff([]string{"github:maria"}, f.pendingRelease()); diff != "" {
			t.Errorf("%s: release approvals (-want +got):\n%s", tc.name, diff)
		}
	}

	f.hookURL = leader.hookURL
	if code, _ := f.click(release.ID, github.ActionReleaseApprove, "mark", secret); code != http.StatusOK {
		t.Fatalf("release by mark: %d", code)
	}
	f.waitRunID(release.ID, "success", concluded("success"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := f.history()
		if len(h) > 0 && h[0].ReleasedBy == "github:maria, github:mark" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %+v: want the apply released by maria and mark", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
