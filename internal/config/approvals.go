package config

import "strings"

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
	seen := map[string]bool{}
	for i, t := range a.Teams {
		org, slug, ok := strings.Cut(t, "/")
		switch {
		case !ok || org == "" || slug == "" || strings.Contains(slug, "/"):
			bad(field+".teams", "entry %d %q: want org/team-slug, e.g. acme/sre", i, t)
		case seen[strings.ToLower(t)]:
			bad(field+".teams", "entry %d %q: listed twice", i, t)
		}
		seen[strings.ToLower(t)] = true
	}
}
