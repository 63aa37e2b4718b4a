package github_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/policy"
)

// setPolicy gives prod the approval policy a.
func (f *flow) setPolicy(a config.Approvals) {
	f.t.Helper()
	e := f.cfg.Environments["prod"]
	e.Approvals = a
	f.cfg.Environments["prod"] = e
	if err := f.cfg.Validate(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *flow) pending() *approval.Pending {
	f.t.Helper()
	st, err := f.d.Store().Load(context.Background(), "prod")
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Pending
}

// TestFlowTwoOfTwo: prod needs two distinct approvers. The first click counts and the run shows "1 of 2
// approvals: @maria" with its buttons; the same person clicking again changes nothing; the approvals
// survive a restart; a changed plan starts from none; the second approver applies, and the history and the
// run name both.
func TestFlowTwoOfTwo(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "admin")
	f.setPolicy(config.Approvals{Required: 2})
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if !strings.Contains(run.Summary, "2 distinct approvers must approve this same plan") {
		t.Errorf("the proposed run does not state the rule:\n%s", run.Summary)
	}
	tallied := func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && len(r.Actions) == 2 && strings.Contains(r.Title, "1 of 2 approvals: @maria")
	}
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	run = f.waitRun(sha, "1 of 2 approvals: @maria", tallied)
	if !strings.Contains(run.Summary, "1 of 2 approvals: @maria") {
		t.Errorf("tallied run summary:\n%s", run.Summary)
	}
	// The same person again: still one approval, still asking.
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve again: %d", code)
	}
	f.waitRun(sha, "in progress, then tallied again", tallied)
	if p := f.pending(); p == nil || !cmp.Equal(p.Approvers(), []string{"github:maria"}) {
		t.Fatalf("pending after maria twice: %+v, want approvals [maria]", p)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied with one approval of two: %s", f.image())
	}

	f.restart()
	run = f.waitRun(sha, "still tallied after the restart", tallied)
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitImage("1.0.1")
	run = f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(run.Summary, "@maria, @mark") {
		t.Errorf("result summary does not name both approvers:\n%s", run.Summary)
	}
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:maria, github:mark" || !cmp.Equal(h[0].Approvers, []string{"github:maria", "github:mark"}) {
		t.Errorf("history = %+v, want one apply approved by maria and mark", h)
	}

	// A new plan starts from none.
	sha2 := f.commit("1.0.2")
	f.trigger()
	run = f.waitRun(sha2, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(sha2, "1 of 2 approvals: @mark", func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && strings.Contains(r.Title, "1 of 2 approvals: @mark")
	})
}

// TestFlowFourEyes: under forbidAuthors, the author of the commit (nothing applied before: the pending
// commit alone) clicking Approve is refused, the run says why and keeps its buttons, nothing is counted;
// someone else's approval applies.
func TestFlowFourEyes(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "admin")
	f.setPolicy(config.Approvals{ForbidAuthors: true})
	sha := f.commit("1.0.1")
	f.gh.Repo(owner, repo).SetCommitAuthor(sha, "maria")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if !strings.Contains(run.Summary, "the authors of the commits deployed may not approve (four-eyes)") {
		t.Errorf("the proposed run does not state the rule:\n%s", run.Summary)
	}
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	run = f.waitRun(sha, "the refusal noted", func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && strings.Contains(r.Summary, "@maria may not approve this plan: four-eyes: github:maria wrote or committed commit "+sha[:12])
	})
	if len(run.Actions) != 2 {
		t.Errorf("refused run lost its buttons: %+v", run.Actions)
	}
	if p := f.pending(); p == nil || len(p.Approvals) != 0 {
		t.Fatalf("pending after the author's click: %+v, want no approvals", p)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied on the author's approval: %s", f.image())
	}
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:mark" {
		t.Errorf("history = %+v, want one apply approved by mark", h)
	}

	// The next commits: the range after the applied one (by maria) up to the pending one. Mark wrote one of
	// them and is refused; maria's commit is applied already, so she may approve.
	sha2 := f.commit("1.0.0")
	f.gh.Repo(owner, repo).SetCommitAuthor(sha2, "mark")
	sha3 := f.commit("1.0.2")
	f.gh.Repo(owner, repo).SetCommitAuthor(sha3, "wendy") // a commit whose author GitHub knows (an untied one refuses everyone)
	f.trigger()
	run = f.waitRun(sha3, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitRun(sha3, "mark refused", func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && strings.Contains(r.Summary, "@mark may not approve this plan: four-eyes: github:mark wrote or committed the commits after "+sha[:12]+" up to "+sha3[:12])
	})
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve by maria: %d", code)
	}
	f.waitImage("1.0.2")
	f.waitRun(sha3, "success", concluded("success")) // completed after the history is recorded
	if h := f.history(); len(h) != 2 || h[0].Approver != "github:maria" {
		t.Errorf("history = %+v, want the second apply approved by maria", h)
	}
}

// TestFlowTwoOfTwoAcrossReplicas: the first approval reaches the standby, which counts it into the shared
// pending record and shows the tally; the second reaches the leader, which applies with both.
func TestFlowTwoOfTwoAcrossReplicas(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "admin")
	f.setPolicy(config.Approvals{Required: 2})
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
	f.hookURL = standby.hookURL
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("click on the standby: %d", code)
	}
	f.waitRun(sha, "1 of 2 approvals: @maria", func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && strings.Contains(r.Title, "1 of 2 approvals: @maria")
	})
	f.hookURL = leader.hookURL
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("click on the leader: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	f.d = leader.d
	if h := f.history(); len(h) != 1 || !cmp.Equal(h[0].Approvers, []string{"github:maria", "github:mark"}) {
		t.Errorf("history = %+v, want one apply approved by maria and mark", h)
	}
}

// TestFlowRuleMessageOnTheCheckRun: the first text of the check run of a plan an approval rule applies to
// says what the rule asks, with its message, before anyone approves.
func TestFlowRuleMessageOnTheCheckRun(t *testing.T) {
	f := newFlow(t)
	const msg = "any change to prod needs 2 approvers"
	f.setPolicy(config.Approvals{Rules: []policy.Rule{{Name: "two", When: "size(plan.changes) > 0", Required: 2, Message: msg}}})
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if want := "**Approval rules:** 0 of 2 approvals (" + msg + ")."; !strings.Contains(run.Summary, want) {
		t.Errorf("the proposed run does not say %q:\n%s", want, run.Summary)
	}
}

// TestFlowDeferredOnTheCheckRun: a plan approved inside a freeze is not applied, and its check run says it
// waits for the deploy window and until when; a newer commit supersedes it, completing that run.
func TestFlowDeferredOnTheCheckRun(t *testing.T) {
	f := newFlow(t)
	e := f.cfg.Environments["prod"]
	e.Windows = policy.Windows{Deny: []policy.Window{{Name: "year-end", From: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		To: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}}
	f.cfg.Environments["prod"] = e
	if err := f.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	run = f.waitRun(sha, "deferred", func(r githubtest.CheckRun) bool { return r.Status == "queued" })
	const why = "waiting for the deploy window (inside the deny window year-end): opens "
	if !strings.HasPrefix(run.Title, "Deferred: "+why) || !strings.Contains(run.Summary, "**Deferred:** "+why) {
		t.Errorf("deferred run %q:\n%s", run.Title, run.Summary)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("applied inside the freeze: %s", f.image())
	}
	// A newer commit replaces the deferred plan: its run is completed as superseded, not left queued.
	sha2 := f.commit("1.0.2")
	f.trigger()
	f.waitRun(sha2, "the newer plan awaiting approval", awaitingApproval)
	f.waitRun(sha, "the deferred run superseded", concluded("neutral"))
}

// TestFlowEnvironmentTeams: prod's own approvers (a team) replace github.approvers: a maintainer who is not
// in the team is refused, and the run says prod's rule; a team member without repository access approves.
func TestFlowEnvironmentTeams(t *testing.T) {
	f := newFlow(t)
	f.gh.AddTeamMember("acme", "prod-approvers", "pat")
	f.setPolicy(config.Approvals{Teams: []string{"acme/prod-approvers"}})
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	f.waitRun(sha, "maria refused", func(r githubtest.CheckRun) bool {
		return awaitingApproval(r) && strings.Contains(r.Summary, "@maria has maintain on acme/manifests; approving prod needs membership of acme/prod-approvers")
	})
	if code, _ := f.click(run.ID, "approve", "pat", secret); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success")) // the history is written before the run completes
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:pat" {
		t.Errorf("history = %+v, want one apply approved by pat", h)
	}
}

// TestFlowLostClickKeepsTheTally: with one of two approvals counted, a click lost with its replica gives
// the run its buttons back still showing the approval counted.
func TestFlowLostClickKeepsTheTally(t *testing.T) {
	f := newFlow(t)
	f.resync, f.repropose = 200*time.Millisecond, 200*time.Millisecond
	f.setPolicy(config.Approvals{Required: 2})
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(sha, "1 of 2 approvals: @maria", func(r githubtest.CheckRun) bool { return strings.Contains(r.Title, "1 of 2 approvals") })
	markClicked(t, f.gh, run.ID, time.Now().Add(-github.DefaultLostClickAfter-time.Minute), "Approval by @mark, counting")
	back := f.waitRunID(run.ID, "its buttons back", awaitingApproval)
	if !strings.Contains(back.Summary, "Lost: “Approval by @mark, counting”") || !strings.Contains(back.Summary, "**1 of 2 approvals: github:maria.**") {
		t.Errorf("restored run summary:\n%s", back.Summary)
	}
}
