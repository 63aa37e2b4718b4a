package daemon

import (
	"context"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/policy"
)

// TestApprovalRuleOverRevisionFiles: on the real daemon, with the manifests served by a real git server,
// prod's rule says a change touching environments/prod/payments.json needs 2 approvers. The rule reads
// revision.files, which the daemon's approval counter lists through the git source (Source.Range) from the
// last revision deployed to the one planned: the first plan (no payments.json) needs one approver; a
// commit that adds payments.json needs two and shows the rule's message, is not applied with one, and is
// with the second; the next commit touches only manifest.json, so its range (since the payments commit
// was deployed) holds no payments.json and one approver applies it. A daemon whose gate did not reach
// Source.Range would refuse (or ignore) the rule, and this test fails.
func TestApprovalRuleOverRevisionFiles(t *testing.T) {
	h := newHarness(t, "prod")
	cluster.Env(t).CreateDeployment(t, h.ns["prod"], "payments-api", imageRepo+"payments-api:1.0.0")
	const msg = "changes to environments/prod/payments.json need 2 approvers"
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Rules: []policy.Rule{
		{Name: "payments-file", When: `revision.files.exists(f, f == "environments/prod/payments.json")`, Required: 2, Message: msg},
	}}
	h.cfg.Environments["prod"] = e
	if err := h.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := h.start()

	// The first plan, web 0.9.0 → 1.0.0: its commits touch environments/prod/manifest.json only.
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	if p.Needed() != 1 || len(p.Reasons) != 0 {
		t.Fatalf("the web plan needs %d (%v); want 1, no rule", p.Needed(), p.Reasons)
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil || !got.Complete() {
		t.Fatalf("Approve of the web plan = %+v, %v; want complete", got, err)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")

	// A commit adding environments/prod/payments.json (payments-api 1.0.0 → 2.0.0).
	rev := h.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"includes": ["payments.json"], "services": [{"name": "web", "containers": [{"dockerTag": "1.0.0"}]}]}`,
		"environments/prod/payments.json": `{"services": [{"name": "payments-api", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "payments-api 2.0.0")
	r.d.Source().Trigger()
	p = r.waitPending(t, "prod", rev)
	if want := "0 of 2 approvals (" + msg + ")"; p.Tally() != want {
		t.Fatalf("the payments plan: %q; want %q", p.Tally(), want)
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil || got.Complete() {
		t.Fatalf("Approve by alice = %+v, %v; want 1 of 2", got, err)
	}
	if img := cluster.Env(t).Image(t, h.ns["prod"], "payments-api"); img != imageRepo+"payments-api:1.0.0" {
		t.Fatalf("payments-api runs %s after one approval of the two the rule asks", img)
	}
	if got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob")); err != nil || !got.Complete() {
		t.Fatalf("Approve by bob = %+v, %v; want complete", got, err)
	}
	waitImage(t, h.ns["prod"], "payments-api", imageRepo+"payments-api:2.0.0")

	// The next commit touches manifest.json only: since the payments commit was deployed, no payments.json.
	rev = h.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"includes": ["payments.json"], "services": [{"name": "web", "containers": [{"dockerTag": "1.1.0"}]}]}`,
	}, "web 1.1.0")
	r.d.Source().Trigger()
	p = r.waitPending(t, "prod", rev)
	if p.Needed() != 1 || len(p.Reasons) != 0 {
		t.Fatalf("the web 1.1.0 plan needs %d (%v); want 1: its range does not touch payments.json", p.Needed(), p.Reasons)
	}
}
