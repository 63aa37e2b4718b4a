package authoring

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyTest: `reconciler policy test` over a plan file says which rules applied and how an
// approval by --as would come out: counted, more needed, or refused with the reason (exit non-zero).
func TestPolicyTest(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(cfg, []byte(`
environments:
  prod:
    lockPath: apps/prod
    targets: [{name: a, namespace: apps}]
    approvals:
      rules:
        - name: payments
          when: '"payments-api" in plan.services'
          required: 2
          teams: [acme/payments]
          message: payments-api changes need 2 approvers from acme/payments
        - name: contractors
          when: revision.authors.exists(a, a.endsWith("@contractor.example"))
          forbidAuthors: true
        - name: friday
          when: now.getDayOfWeek("Europe/London") == 5
          required: 3
        - name: broken
          when: 'size(plan.changes) > 5 && plan.changes[9].service == ""'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := func(services ...string) string {
		var changes []map[string]string
		for _, s := range services {
			changes = append(changes, map[string]string{"service": s, "target": "a", "kind": "Deployment", "name": s, "container": s,
				"from": "reg.example.com/" + s + ":1.0.0", "to": "reg.example.com/" + s + ":1.1.0"})
		}
		b, _ := json.Marshal(map[string]any{"environment": "prod", "revision": "3f2a9c1d", "planHash": "sha256:p", "changes": changes})
		p := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const thursday = "2026-11-26T12:00:00Z"
	for _, tc := range []struct {
		name     string
		args     []string
		decision string // -o json's decision
		reason   string
		fails    bool
	}{
		{"no rule applies", []string{"--plan", plan("web"), "--as", "github:alice", "--at", thursday}, "counted", "the plan may be applied with this approval", false},
		{"payments needs two from its team", []string{"--plan", plan("payments-api"), "--as", "github:alice", "--at", thursday}, "more",
			"counted as 1 of 2 approvals; 1 more must approve; at approval, GitHub is asked that github:alice passes: the rules payments need membership of acme/payments", false},
		{"automation cannot pass a team rule", []string{"--plan", plan("payments-api"), "--as", "token:ci", "--at", thursday}, "refused",
			"token:ci acts for no person, and approvals.automation is deny for this plan (required 2, four-eyes false)", true},
		{"four-eyes from a rule", []string{"--plan", plan("web"), "--as", "github:dev", "--authors", "dev@contractor.example", "--at", thursday}, "refused",
			"four-eyes: github:dev is among the authors of the commits to deploy", true},
		{"the clock in a zone", []string{"--plan", plan("web"), "--as", "github:alice", "--at", "2026-11-27T12:00:00Z"}, "more",
			"counted as 1 of 3 approvals; 2 more must approve", false},
		{"a rule that errors refuses", []string{"--plan", plan("a", "b", "c", "d", "e", "f"), "--as", "github:alice", "--at", thursday}, "refused",
			`approval rule "broken" could not be evaluated: index out of bounds: 9`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := newReconciler(&out, &errOut)
			cmd.SetArgs(append([]string{"policy", "test", "--config", cfg, "--env", "prod", "-o", "json"}, tc.args...))
			err := cmd.Execute()
			if (err != nil) != tc.fails {
				t.Fatalf("policy test: %v (stderr %s), want failure %v", err, errOut.String(), tc.fails)
			}
			var r policyReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			if diff := cmp.Diff([2]string{tc.decision, tc.reason}, [2]string{r.Decision, r.Reason}); diff != "" {
				t.Errorf("decision and reason (-want +got):\n%s", diff)
			}
			if len(r.Rules) != 4 {
				t.Errorf("%d rules explained, want all 4", len(r.Rules))
			}
		})
	}
	// The text form names each rule and what it did.
	var out bytes.Buffer
	cmd := newReconciler(&out, &out)
	cmd.SetArgs([]string{"policy", "test", "--config", cfg, "--env", "prod", "--plan", plan("payments-api"), "--as", "github:alice", "--at", thursday})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"payments             applies   payments-api changes need 2 approvers from acme/payments", "friday               -", "Requirement: 2 distinct approver(s)", "github:alice: more: counted as 1 of 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPolicyTestWindows: `reconciler policy test` judges the environment's deploy windows at --at (which
// window allows or denies, and when they open or close; a counted approval then waits), and rules see the
// files and trailers given.
func TestPolicyTestWindows(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(cfg, []byte(`
environments:
  prod:
    lockPath: apps/prod
    targets: [{name: a, namespace: apps}]
    windows:
      allow: [{name: office-hours, schedule: "CRON_TZ=Europe/London 0 8 * * 1-5", duration: 9h}]
      deny: [{name: year-end, from: "2026-12-19", to: "2027-01-04T08:00", timeZone: Europe/London}]
    approvals:
      rules:
        - name: prod-paths
          when: revision.files.exists(f, f.startsWith("environments/prod/"))
          required: 2
        - name: risky
          when: '"Change-Risk" in revision.trailers && "high" in revision.trailers["Change-Risk"]'
          required: 3
`), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(`{"environment": "prod", "revision": "3f2a9c1d", "planHash": "sha256:p", "changes": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		open   bool
		why    string
		reason string
	}{
		{"inside office hours", []string{"--at", "2026-11-26T12:00:00Z"}, true, "inside the allow window office-hours",
			"the plan may be applied with this approval"},
		{"a Saturday", []string{"--at", "2026-11-28T12:00:00Z"}, false, "outside every allow window",
			"the plan may be applied with this approval; it waits for the deploy windows, which are closed: outside every allow window; opens Mon 30 Nov 2026 08:00 Europe/London"},
		{"the year-end freeze", []string{"--at", "2026-12-23T12:00:00Z"}, false, "inside the deny window year-end",
			"the plan may be applied with this approval; it waits for the deploy windows, which are closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London"},
		{"files under environments/prod", []string{"--at", "2026-11-26T12:00:00Z", "--files", "environments/prod/manifest.json,README.md"}, true,
			"inside the allow window office-hours", "counted as 1 of 2 approvals; 1 more must approve"},
		{"a Change-Risk trailer", []string{"--at", "2026-11-26T12:00:00Z", "--trailer", "change-risk=low", "--trailer", "Change-Risk=high"}, true,
			"inside the allow window office-hours", "counted as 1 of 3 approvals; 2 more must approve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := newReconciler(&out, &errOut)
			cmd.SetArgs(append([]string{"policy", "test", "--config", cfg, "--env", "prod", "--plan", planFile, "--as", "github:alice", "-o", "json"}, tc.args...))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("policy test: %v (stderr %s)", err, errOut.String())
			}
			var r policyReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			if r.Windows.Open != tc.open || r.Windows.Why != tc.why || r.Reason != tc.reason {
				t.Errorf("windows %v %q, reason %q\nwant    %v %q, reason %q", r.Windows.Open, r.Windows.Why, r.Reason, tc.open, tc.why, tc.reason)
			}
		})
	}
	var out, errOut bytes.Buffer
	cmd := newReconciler(&out, &errOut)
	cmd.SetArgs([]string{"policy", "test", "--config", cfg, "--env", "prod", "--plan", planFile, "--as", "github:alice", "--at", "2026-11-26T12:00:00Z"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "Windows at 2026-11-26T12:00:00Z: open: inside the allow window office-hours; closes Thu 26 Nov 2026 17:00 Europe/London"; !strings.Contains(out.String(), want) {
		t.Errorf("text output lacks %q:\n%s", want, out.String())
	}
	cmd = newReconciler(&out, &errOut)
	cmd.SetArgs([]string{"policy", "test", "--config", cfg, "--env", "prod", "--plan", planFile, "--as", "github:alice", "--trailer", "no equals sign"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "want Key=Value") {
		t.Errorf("a malformed --trailer: %v; want refused", err)
	}
}
