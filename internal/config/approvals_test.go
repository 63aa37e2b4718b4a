package config

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
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
