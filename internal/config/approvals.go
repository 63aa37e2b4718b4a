package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/policy"
)

// Approvals is one environment's approval policy: how many distinct people must approve the same plan,
// whether the authors of what it deploys are kept from approving it, and who may approve at all.
type Approvals struct {
	// Required is how many distinct approvers must approve the same plan (default 1).
	Required int `json:"required,omitempty"`
	// ForbidAuthors (four-eyes) keeps the authors of the commits since the last applied revision, up to and
	// including the pending one, from approving.
	ForbidAuthors bool `json:"forbidAuthors,omitempty"`
	// Teams and MinPermission, when either is set, replace github.approvers for this environment.
	Teams         []string `json:"teams,omitempty"`
	MinPermission string   `json:"minPermission,omitempty"`
	// Automation says whether a caller that acts for no person (a named token or Kubernetes user without
	// actsFor) may approve: AutomationAllow or AutomationDeny; "" is deny where Required > 1 or ForbidAuthors
	// is set (automation would make a second person or four-eyes mean nothing), else allow.
	Automation string `json:"automation,omitempty"`
	// Rules are the approval rules in CEL (internal/policy): every rule whose when is true for a plan
	// applies on top of the fields above, and the strictest combination wins.
	Rules []policy.Rule `json:"rules,omitempty"`
}

// With is a combined with what the approval rules that apply to a plan ask (req): the larger required,
// four-eyes if either asks it. Teams and minPermission stay a's (the door's rule): req's are checked on
// top of them, for the approver's person.
func (a Approvals) With(req policy.Requirement) Approvals {
	a.Required = max(a.Required, req.Required, 1)
	a.ForbidAuthors = a.ForbidAuthors || req.ForbidAuthors
	return a
}

// RuleSet compiles the approval rules; Validate has compiled them once already, so an error here means
// a configuration that was not validated.
func (a Approvals) RuleSet() (*policy.Set, error) {
	c, err := policy.NewCompiler()
	if err != nil {
		return nil, err
	}
	return policy.NewSet(c, a.Rules)
}

// The values of approvals.automation.
const (
	AutomationAllow = "allow"
	AutomationDeny  = "deny"
)

// AutomationAllowed reports whether automation may approve under a: approvals.automation when set, else
// deny where required > 1 or forbidAuthors, allow otherwise.
func (a Approvals) AutomationAllowed() bool {
	switch a.Automation {
	case AutomationAllow:
		return true
	case AutomationDeny:
		return false
	}
	return a.Required <= 1 && !a.ForbidAuthors
}

// MaxRequiredApprovals bounds approvals.required: more would not fit the pending record in reason.
const MaxRequiredApprovals = 10

// Approvers returns the environment's approvers rule: its own teams and minPermission when it sets either
// (an empty minPermission then means no repository permission is enough: only the teams), else global.
func (a Approvals) Approvers(global Approvers) Approvers {
	if len(a.Teams) == 0 && a.MinPermission == "" {
		return global
	}
	return Approvers{MinPermission: a.MinPermission, Teams: a.Teams}
}

// ApprovalPolicy returns env's effective approval policy: required defaulted to 1, teams and minPermission
// from github.approvers unless the environment sets its own. An environment not configured gets the
// global rule and one approver.
func (c *Config) ApprovalPolicy(env string) Approvals {
	a := c.Environments[env].Approvals
	if a.Required == 0 {
		a.Required = 1
	}
	r := a.Approvers(c.GitHub.Approvers)
	a.Teams, a.MinPermission = r.Teams, r.MinPermission
	return a
}

// validate checks an environment's approvals section; field is "environments.<name>.approvals".
func (a Approvals) validate(field string, bad func(field, format string, a ...any)) {
	if a.Required < 0 || a.Required > MaxRequiredApprovals {
		bad(field+".required", "must be between 1 and %d (0 keeps the default, 1), got %d", MaxRequiredApprovals, a.Required)
	}
	switch a.Automation {
	case "", AutomationAllow, AutomationDeny:
	default:
		bad(field+".automation", "%q: want allow or deny (default deny where required > 1 or forbidAuthors is set, else allow)", a.Automation)
	}
	switch a.MinPermission {
	case "", "read", "triage", "write", "maintain", "admin":
	default:
		bad(field+".minPermission", "unknown permission %q; accepted: read, triage, write, maintain, admin", a.MinPermission)
	}
	validateTeams(field+".teams", a.Teams, bad)
	validateRules(field+".rules", a.Rules, bad)
}

// validateTeams checks a list of org/team-slug entries; field names it.
func validateTeams(field string, teams []string, bad func(field, format string, a ...any)) {
	seen := map[string]bool{}
	for i, t := range teams {
		org, slug, ok := strings.Cut(t, "/")
		switch {
		case !ok || org == "" || slug == "" || strings.Contains(slug, "/"):
			bad(field, "entry %d %q: want org/team-slug, e.g. acme/sre", i, t)
		case seen[strings.ToLower(t)]:
			bad(field, "entry %d %q: listed twice", i, t)
		}
		seen[strings.ToLower(t)] = true
	}
}

// validateRules checks approval rules and compiles their when expressions, with errors naming the rule's
// key and, for an expression, the line and column in it; field is "environments.<name>.approvals.rules".
func validateRules(field string, rules []policy.Rule, bad func(field, format string, a ...any)) {
	if len(rules) == 0 {
		return
	}
	if len(rules) > policy.MaxRules {
		bad(field, "%d rules: at most %d", len(rules), policy.MaxRules)
		return
	}
	c, err := policy.NewCompiler()
	if err != nil {
		bad(field, "%v", err)
		return
	}
	names := map[string]int{}
	for i, r := range rules {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch j, dup := names[r.Name]; {
		case strings.TrimSpace(r.Name) == "":
			bad(f+".name", "required: a name shown where the rule applies")
		case dup:
			bad(f+".name", "%q is also the name of rules[%d]", r.Name, j)
		default:
			names[r.Name] = i
		}
		if r.Required < 0 || r.Required > MaxRequiredApprovals {
			bad(f+".required", "must be between 0 (the rule asks no count) and %d, got %d", MaxRequiredApprovals, r.Required)
		}
		switch r.MinPermission {
		case "", "read", "triage", "write", "maintain", "admin":
		default:
			bad(f+".minPermission", "unknown permission %q; accepted: read, triage, write, maintain, admin", r.MinPermission)
		}
		validateTeams(f+".teams", r.Teams, bad)
		if len(r.Message) > 500 {
			bad(f+".message", "%d characters long: at most 500", len(r.Message))
		}
		if _, err := c.Compile(r); err != nil {
			var ce *policy.CompileError
			if errors.As(err, &ce) && ce.Line > 0 {
				bad(f+".when", "line %d, column %d: %s", ce.Line, ce.Column, ce.Message)
			} else {
				bad(f+".when", "%v", err)
			}
		}
	}
}
