package github_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// TestFlowClickOnAStandbyReplica: two replicas share the state; GitHub delivers the click to the one that
// does not lead. The standby answers at once and hands the decision to the leader through the state
// ConfigMap: a plan that changed meanwhile (drift) is withdrawn on its check run, not left in progress;
// the fresh plan, approved on the standby, is applied by the leader and its run completes as success.
func TestFlowClickOnAStandbyReplica(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	le := daemon.LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond}
	a := f.startReplica(le)
	f.d = a.d
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	b := f.startReplica(le)
	leader, standby := a, b
	if !a.d.Leading() {
		leader, standby = b, a
	}
	if standby.d.Leading() {
		t.Fatal("both replicas lead")
	}

	// Drift: the proposed plan (1.0.0 → 1.0.1) is no longer what would run.
	f.setImage(f.reg.Ref("team/api", "1.0.2"))
	f.hookURL = standby.hookURL
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("click on the standby: %d", code)
	}
	stale := f.waitRunID(run.ID, "withdrawn", concluded("neutral"))
	if !strings.Contains(stale.Title, "Replaced") && !strings.Contains(stale.Title, "no longer current") {
		t.Errorf("stale run title %q", stale.Title)
	}
	fresh := f.waitRun(sha, "a fresh run awaiting approval", func(r githubtest.CheckRun) bool { return r.ID != run.ID && awaitingApproval(r) })

	if code, _ := f.click(fresh.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("second click on the standby: %d", code)
	}
	f.waitImage("1.0.1")
	done := f.waitRun(sha, "success", concluded("success"))
	if done.ID != fresh.ID || !strings.Contains(done.Summary, "@maria") {
		t.Errorf("completed run %d (want %d), summary:\n%s", done.ID, fresh.ID, done.Summary)
	}
	f.d = leader.d
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:maria" || h[0].Result != approval.ResultSucceeded {
		t.Errorf("history = %+v, want one success approved by maria", h)
	}
}

// TestFlowLostClickGetsItsButtonsBack: a replica took an approval click (the run went in progress) and
// stopped before handing the decision to the leader. The plan is still pending, so once the click is older
// than the lost-click delay the leader's next proposal gives the run back its plan and buttons, saying what
// was lost; approving again deploys.
func TestFlowLostClickGetsItsButtonsBack(t *testing.T) {
	f := newFlow(t)
	f.resync, f.repropose = 200*time.Millisecond, 200*time.Millisecond
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)

	markClicked(t, f.gh, run.ID, time.Now().Add(-github.DefaultLostClickAfter-time.Minute), "Approved by @maria, applying")
	back := f.waitRunID(run.ID, "its buttons back", awaitingApproval)
	if !strings.Contains(back.Summary, "Lost: “Approved by @maria, applying”") || len(back.Actions) != 2 {
		t.Errorf("restored run: %d actions, summary:\n%s", len(back.Actions), back.Summary)
	}
	if strings.Contains(f.image(), ":1.0.1") {
		t.Errorf("image %s: a lost click must not deploy", f.image())
	}

	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	f.waitImage("1.0.1")
	if done := f.waitRunID(run.ID, "success", concluded("success")); !strings.Contains(done.Summary, "@maria") {
		t.Errorf("completed run summary:\n%s", done.Summary)
	}
}
