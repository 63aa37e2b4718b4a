package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestTwoOfTwoWithFourEyes: prod needs two distinct approvers, neither an author of what it deploys. Without
// GitHub, authors are the commits' e-mail addresses. The author is refused and nothing is counted; the
// same person approving twice counts once; the approvals survive a restart; a new plan starts from none;
// the second distinct approver applies, and the history names both.
func TestTwoOfTwoWithFourEyes(t *testing.T) {
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Required: 2, ForbidAuthors: true}
	h.cfg.Environments["prod"] = e
	ctx := context.Background()
	r := h.start()
	first := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", first)
	if p.Required != 2 || len(p.Approvals) != 0 {
		t.Fatalf("pending: required %d, approvals %v; want 2 and none", p.Required, p.Approvals)
	}
	// Nothing applied yet: the authors are the pending commit's (test@stagehand.invalid, by gitserver).
	_, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("test"))
	var refused *approval.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "four-eyes: github:test wrote or committed commit "+approval.ShortRevision(first)) {
		t.Fatalf("Approve by the author = %v, want a four-eyes refusal naming the commit", err)
	}
	bob, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob"))
	if err != nil || bob.Complete() || bob.Tally() != "1 of 2 approvals: github:bob" {
		t.Fatalf("Approve by bob = %+v, %v; want pending, 1 of 2 approvals: bob", bob, err)
	}
	// A new revision is a new plan: the approvals start again from none.
	second := h.git.Repo("manifests").Push(t, gitserver.Commit{Branch: "main", Author: gitserver.Person{Name: "Alice", Email: "alice@acme.example"},
		Files: map[string]string{"environments/prod/manifest.json": manifestJSON(false, map[string]string{"web": "1.1.0"})}, Message: "web 1.1.0"})
	r.d.Source().Trigger()
	p = r.waitPending(t, "prod", second)
	if len(p.Approvals) != 0 {
		t.Fatalf("approvals of the new plan = %v, want none", p.Approvals)
	}
	for range 2 { // the same person twice counts once
		if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob")); err != nil || got.Tally() != "1 of 2 approvals: github:bob" {
			t.Fatalf("Approve by bob = %+v, %v; want 1 of 2 approvals: bob", got, err)
		}
	}
	if _, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("ALICE")); !errors.Is(err, approval.ErrRefused) {
		t.Fatalf("Approve by alice (alice@acme.example wrote %s) = %v, want refused", approval.ShortRevision(second), err)
	}
	r.stop()

	r = h.start()
	p = r.waitPending(t, "prod", second)
	if diff := cmp.Diff([]string{"github:bob"}, p.Approvers()); diff != "" {
		t.Fatalf("approvals after a restart (-want +got):\n%s", diff)
	}
	if cluster.Env(t).Image(t, h.ns["prod"], "web") != imageRepo+"web:0.9.0" {
		t.Fatal("applied with one approval of two")
	}
	done, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("carol"))
	if err != nil || !done.Complete() {
		t.Fatalf("Approve by carol = %+v, %v; want complete", done, err)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.1.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the apply in the history", func() bool {
		hist = r.history(t, "prod")
		return len(hist) > 0
	})
	if e := hist[0]; e.Result != approval.ResultSucceeded || e.Approver != "github:bob, github:carol" || !cmp.Equal(e.Approvers, []string{"github:bob", "github:carol"}) {
		t.Errorf("history entry: result %s, approver %q, approvers %v; want succeeded by bob, carol", e.Result, e.Approver, e.Approvers)
	}
}

// ghUser is the principal of the GitHub user login, as a click or the web page passes it.
func ghUser(login string) identity.Principal {
	return identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: login}}
}

// TestActsForIsThePerson: a token acting for a person is that person for N-of-M and four-eyes. alice
// approving through GitHub and then through her token counts once (a 2-of-2 plan stays pending); the
// commit author's token is refused under forbidAuthors; another person completes the plan.
func TestActsForIsThePerson(t *testing.T) {
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Required: 2, ForbidAuthors: true}
	h.cfg.Environments["prod"] = e
	ctx := context.Background()
	r := h.start()
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	forPerson := func(token, login string) identity.Principal {
		return identity.Principal{ID: identity.ID{Kind: identity.Token, Name: token}, ActsFor: identity.ID{Kind: identity.GitHub, Name: login}}
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil || got.Complete() {
		t.Fatalf("Approve by github:alice = %+v, %v; want 1 of 2", got, err)
	}
	got, err := r.d.Approve(ctx, "prod", p.PlanHash, forPerson("alice-cli", "alice"))
	if err != nil || got.Complete() || got.Tally() != "1 of 2 approvals: github:alice" {
		t.Fatalf("Approve by alice's token = %+v, %v; want still 1 of 2 approvals: github:alice", got, err)
	}
	// The pending commit's author is test@stagehand.invalid (gitserver): a token acting for github:test is them.
	if _, err := r.d.Approve(ctx, "prod", p.PlanHash, forPerson("test-cli", "test")); !errors.Is(err, approval.ErrRefused) {
		t.Fatalf("Approve by the author's token = %v, want a four-eyes refusal", err)
	}
	done, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob"))
	if err != nil || !done.Complete() {
		t.Fatalf("Approve by bob = %+v, %v; want complete", done, err)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
}

// TestSameNameTwoKinds: a GitHub login and a named token spelled alike (ci-locker) are two identities: both
// are counted toward a 2-of-2 plan, and the history names each with its kind.
func TestSameNameTwoKinds(t *testing.T) {
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Required: 2, Automation: config.AutomationAllow} // the token ci-locker is automation
	h.cfg.Environments["prod"] = e
	ctx := context.Background()
	r := h.start()
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("ci-locker")); err != nil || got.Complete() {
		t.Fatalf("Approve by github:ci-locker = %+v, %v; want 1 of 2", got, err)
	}
	token := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "ci-locker"}}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, token); err != nil || !got.Complete() {
		t.Fatalf("Approve by token:ci-locker = %+v, %v; want complete", got, err)
	}
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the apply in the history", func() bool {
		hist = r.history(t, "prod")
		return len(hist) > 0
	})
	if diff := cmp.Diff([]string{"github:ci-locker", "token:ci-locker"}, hist[0].Approvers); diff != "" {
		t.Errorf("approvers recorded (-want +got):\n%s", diff)
	}
}

// TestAutomationRefused: where approvals.required is 2, automation (a token or Kubernetes user acting for
// nobody) may not approve by default: refused with the reason, nothing counted; a token acting for a
// person is counted, and a second person completes the plan.
func TestAutomationRefused(t *testing.T) {
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Required: 2}
	h.cfg.Environments["prod"] = e
	ctx := context.Background()
	r := h.start()
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	for _, who := range []identity.Principal{
		{ID: identity.ID{Kind: identity.Token, Name: "ci-deployer"}},
		{ID: identity.ID{Kind: identity.Kubernetes, Name: "system:serviceaccount:ci:deployer"}},
	} {
		_, err := r.d.Approve(ctx, "prod", p.PlanHash, who)
		var re *approval.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, who.ID.String()+" acts for no person (automation), and approvals.required is 2, so approvals.automation defaults to deny") {
			t.Fatalf("Approve by %s = %v, want refused as automation", who, err)
		}
	}
	alice := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "alice-cli"}, ActsFor: identity.ID{Kind: identity.GitHub, Name: "alice"}}
	got, err := r.d.Approve(ctx, "prod", p.PlanHash, alice)
	if err != nil || got.Tally() != "1 of 2 approvals: token:alice-cli" {
		t.Fatalf("Approve by alice's token = %+v, %v; want 1 of 2 (nothing counted for automation)", got, err)
	}
	if done, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob")); err != nil || !done.Complete() {
		t.Fatalf("Approve by bob = %+v, %v; want complete", done, err)
	}
}
