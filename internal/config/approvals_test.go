package config

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/policy"
)

func TestApprovals(t *testing.T) {
	const env = "environments: {prod: {targets: [{name: eu, namespace: apps}], approvals: %s}}\n"
	global := "github: {approvers: {minPermission: write, teams: [acme/sre]}}\n"
	for _, tc := range []struct {
		name, yaml string
		want       Approvals // ApprovalPolicy("prod")
		err        string
	}{
		{name: "unset", yaml: "environments: {prod: {targets: [{name: eu, namespace: apps}]}}\n" + global,
			want: Approvals{Required: 1, MinPermission: "write", Teams: []string{"acme/sre"}}},
		{name: "two of four-eyes", yaml: fmt.Sprintf(env, "{required: 2, forbidAuthors: true}") + global,
			want: Approvals{Required: 2, ForbidAuthors: true, MinPermission: "write", Teams: []string{"acme/sre"}}},
		{name: "own teams replace the global rule", yaml: fmt.Sprintf(env, "{teams: [acme/prod-approvers]}") + global,
			want: Approvals{Required: 1, Teams: []string{"acme/prod-approvers"}}},
		{name: "own permission replaces the global rule", yaml: fmt.Sprintf(env, "{minPermission: admin}") + global,
			want: Approvals{Required: 1, MinPermission: "admin"}},
		{name: "negative", yaml: fmt.Sprintf(env, "{required: -1}"),
			err: "environments.prod.approvals.required: must be between 1 and 10 (0 keeps the default, 1), got -1"},
		{name: "too many", yaml: fmt.Sprintf(env, "{required: 11}"),
			err: "environments.prod.approvals.required: must be between 1 and 10 (0 keeps the default, 1), got 11"},
		{name: "bad permission", yaml: fmt.Sprintf(env, "{minPermission: owner}"),
			err: `environments.prod.approvals.minPermission: unknown permission "owner"; accepted: read, triage, write, maintain, admin`},
		{name: "bad team", yaml: fmt.Sprintf(env, "{teams: [sre]}"),
			err: `environments.prod.approvals.teams: entry 0 "sre": want org/team-slug, e.g. acme/sre`},
		{name: "team twice", yaml: fmt.Sprintf(env, "{teams: [acme/sre, Acme/SRE]}"),
			err: `environments.prod.approvals.teams: entry 1 "Acme/SRE": listed twice`},
		{name: "automation", yaml: fmt.Sprintf(env, "{required: 2, automation: allow}"),
			want: Approvals{Required: 2, Automation: "allow", MinPermission: "maintain"}},
		{name: "bad automation", yaml: fmt.Sprintf(env, "{automation: maybe}"),
			err: `environments.prod.approvals.automation: "maybe": want allow or deny (default deny where required > 1 or forbidAuthors is set, else allow)`},
		{name: "unknown key", yaml: fmt.Sprintf(env, "{requiredApprovals: 2}"), err: `unknown field "requiredApprovals"`},
		{name: "rules", yaml: fmt.Sprintf(env, `{rules: [{name: payments, when: '"payments-api" in plan.services', required: 2, teams: [acme/payments], message: payments-api changes need 2 approvers from acme/payments}]}`),
			want: Approvals{Required: 1, MinPermission: "maintain", Rules: []policy.Rule{{Name: "payments", When: `"payments-api" in plan.services`,
				Required: 2, Teams: []string{"acme/payments"}, Message: "payments-api changes need 2 approvers from acme/payments"}}}},
		{name: "a rule's when names its key and column", yaml: fmt.Sprintf(env, `{rules: [{name: a, when: "true"}, {name: b, when: "true"}, {name: c, when: "plan.changes.exists(c, c.servce == 'x')"}]}`),
			err: `environments.prod.approvals.rules[2].when: line 1, column 25: undefined field 'servce'`},
		{name: "a rule's when of another type", yaml: fmt.Sprintf(env, `{rules: [{name: a, when: "size(plan.changes)"}]}`),
			err: `environments.prod.approvals.rules[0].when: line 1, column 1: has type int: want bool`},
		{name: "a rule without a name", yaml: fmt.Sprintf(env, `{rules: [{when: "true"}]}`),
			err: `environments.prod.approvals.rules[0].name: required: a name shown where the rule applies`},
		{name: "two rules of one name", yaml: fmt.Sprintf(env, `{rules: [{name: a, when: "true"}, {name: a, when: "false"}]}`),
			err: `environments.prod.approvals.rules[1].name: "a" is also the name of rules[0]`},
		{name: "a rule's bad permission, team and count", yaml: fmt.Sprintf(env, `{rules: [{name: a, when: "true", required: 11, minPermission: owner, teams: [sre]}]}`),
			err: "environments.prod.approvals.rules[0].required: must be between 0 (the rule asks no count) and 10, got 11\n" +
				`environments.prod.approvals.rules[0].minPermission: unknown permission "owner"; accepted: read, triage, write, maintain, admin` + "\n" +
				`environments.prod.approvals.rules[0].teams: entry 0 "sre": want org/team-slug, e.g. acme/sre`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Approvals { return c.ApprovalPolicy("prod") })
		})
	}
}

func TestApprovalPolicyOfAnUnknownEnvironment(t *testing.T) {
	c, err := Parse([]byte("github: {approvers: {teams: [acme/sre]}}"))
	if err != nil {
		t.Fatal(err)
	}
	want := Approvals{Required: 1, MinPermission: "maintain", Teams: []string{"acme/sre"}}
	if diff := cmp.Diff(want, c.ApprovalPolicy("nowhere")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAutomationAllowed: approvals.automation when set, else deny where required > 1 or forbidAuthors.
func TestAutomationAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Approvals
		want bool
	}{
		{"one approver", Approvals{Required: 1}, true},
		{"default required", Approvals{}, true},
		{"two approvers", Approvals{Required: 2}, false},
		{"four-eyes", Approvals{Required: 1, ForbidAuthors: true}, false},
		{"two approvers, allowed", Approvals{Required: 2, Automation: AutomationAllow}, true},
		{"four-eyes, allowed", Approvals{ForbidAuthors: true, Automation: AutomationAllow}, true},
		{"one approver, denied", Approvals{Required: 1, Automation: AutomationDeny}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.AutomationAllowed(); got != tc.want {
				t.Errorf("%+v.AutomationAllowed() = %v, want %v", tc.a, got, tc.want)
			}
		})
	}
}
