package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/policy"
)

// teamApprover is GitHub's answer for the teams of approval rules: members maps a login to its teams.
// It records the rules it was asked.
type teamApprover struct {
	members map[string][]string
	mu      sync.Mutex
	asked   []config.Approvers
}

func (a *teamApprover) check(_ context.Context, _, login string, rule config.Approvers) (bool, string, error) {
	a.mu.Lock()
	a.asked = append(a.asked, rule)
	a.mu.Unlock()
	for _, team := range a.members[login] {
		for _, want := range rule.Teams {
			if strings.EqualFold(team, want) {
				return true, "member of " + team, nil
			}
		}
	}
	return false, "@" + login + " is in none of the teams " + strings.Join(rule.Teams, ", "), nil
}

// TestApprovalRules: on the real daemon, prod's rule says payments-api changes need 2 approvers from
// acme/payments. A plan that does not touch payments-api needs the default (one approver, anyone); a plan
// that does shows 0 of 2 with the rule's message before anyone approves, refuses someone outside the team
// and automation (saying the rule), counts a member, and applies with a second member. A rule that cannot
// be evaluated refuses every approval, naming it.
func TestApprovalRules(t *testing.T) {
	h := newHarness(t, "prod")
	cluster.Env(t).CreateDeployment(t, h.ns["prod"], "payments-api", imageRepo+"payments-api:1.0.0")
	const msg = "payments-api changes need 2 approvers from acme/payments"
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Rules: []policy.Rule{
		{Name: "payments", When: `plan.changes.exists(c, c.service == "payments-api")`, Required: 2, Teams: []string{"acme/payments"}, Message: msg},
		{Name: "majors", When: `plan.changes.exists(c, c.service != "web" && isMajorBump(c))`, Message: "a major version bump"},
		// Read from the real lock service (none is taken here): listing them must not refuse anything.
		{Name: "incident", When: `locks.exists(l, l.type == "incident")`, Required: 3, Message: "an incident lock is in force"},
	}}
	h.cfg.Environments["prod"] = e
	if err := h.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	gh := &teamApprover{members: map[string][]string{"alice": {"acme/payments"}, "dave": {"ACME/Payments"}, "carol": {"acme/sre"}}}
	ctx := context.Background()
	r := h.start(WithRuleApprover(gh.check))

	// web 0.9.0 → 1.0.0 touches no payments-api: the default, one approver of any team.
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if p.Needed() != 1 || len(p.Reasons) != 0 {
		t.Fatalf("pending web plan: needs %d, reasons %v; want 1 and none", p.Needed(), p.Reasons)
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("carol")); err != nil || !got.Complete() {
		t.Fatalf("Approve of the web plan by carol = %+v, %v; want complete", got, err)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	if len(gh.asked) != 0 {
		t.Errorf("GitHub was asked %v for a plan no rule applies to", gh.asked)
	}

	// payments-api 1.0.0 → 2.0.0: both rules apply; 2 approvers from acme/payments.
	rev := h.commit("prod", false, map[string]string{"web": "1.0.0", "payments-api": "2.0.0"})
	r.d.Source().Trigger()
	p = r.waitPending(t, "prod", rev)
	want := "0 of 2 approvals (" + msg + "; a major version bump)"
	if p.Tally() != want {
		t.Fatalf("pending payments plan: %q, want %q before anyone approves", p.Tally(), want)
	}
	for who, reason := range map[identity.Principal]string{
		ghUser("carol"): "approval rule payments (" + msg + "), majors (a major version bump) needs membership of acme/payments (@carol is in none of the teams acme/payments)",
		{ID: identity.ID{Kind: identity.Token, Name: "ci-deployer"}}: "token:ci-deployer acts for no person (automation), and approvals.required is 2",
	} {
		_, err := r.d.Approve(ctx, "prod", p.PlanHash, who)
		var re *approval.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, reason) {
			t.Fatalf("Approve by %s = %v, want refused with %q", who, err, reason)
		}
	}
	got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice"))
	if err != nil || got.Tally() != "1 of 2 approvals: github:alice ("+msg+"; a major version bump)" {
		t.Fatalf("Approve by alice = %+v, %v; want 1 of 2 with the rule's message", got, err)
	}
	if cluster.Env(t).Image(t, h.ns["prod"], "payments-api") != imageRepo+"payments-api:1.0.0" {
		t.Fatal("applied with one approval of the two the rule asks")
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("dave")); err != nil || !got.Complete() {
		t.Fatalf("Approve by dave = %+v, %v; want complete", got, err)
	}
	waitImage(t, h.ns["prod"], "payments-api", imageRepo+"payments-api:2.0.0")
	gh.mu.Lock()
	if diff := cmp.Diff(config.Approvers{Teams: []string{"acme/payments"}}, gh.asked[0]); diff != "" {
		t.Errorf("the rule asked of GitHub (-want +got):\n%s", diff)
	}
	gh.mu.Unlock()
	r.stop()

	// A rule that fails at run time refuses: never read as false.
	e.Approvals.Rules = []policy.Rule{{Name: "third", When: `plan.changes[2].service == "web"`, Message: "never"}}
	h.cfg.Environments["prod"] = e
	rev = h.commit("prod", false, map[string]string{"web": "1.1.0", "payments-api": "2.0.0"})
	r = h.start(WithRuleApprover(gh.check))
	p = r.waitPending(t, "prod", rev)
	if len(p.Reasons) != 1 || !strings.Contains(p.Reasons[0], `approval rule "third" could not be evaluated`) {
		t.Errorf("pending reasons %v, want the rule's error shown", p.Reasons)
	}
	_, err = r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice"))
	var re *approval.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, `approval rule "third" could not be evaluated: index out of bounds`) {
		t.Fatalf("Approve under a failing rule = %v, want refused naming the rule", err)
	}
	if cluster.Env(t).Image(t, h.ns["prod"], "web") != imageRepo+"web:1.0.0" {
		t.Error("applied under a rule that could not be evaluated")
	}
}
