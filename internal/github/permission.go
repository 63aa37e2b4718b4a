package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// permissionRank orders repository roles: read < triage < write < maintain < admin; 0 is none/unknown.
func permissionRank(role string) int {
	switch role {
	case "read":
		return 1
	case "triage":
		return 2
	case "write":
		return 3
	case "maintain":
		return 4
	case "admin":
		return 5
	}
	return 0
}

// Decision is the answer to "may this person approve?".
type Decision struct {
	Allowed bool
	// Why says what granted it ("maintain on acme/manifests", "member of acme/sre") or why not.
	Why string
}

// Approvers decides who may approve a plan and who may read the environments: repository roles and team
// memberships against github.approvers and each environment's own approvals rule (WithApprovals).
type Approvers struct {
	rest        *gh.Client
	owner, repo string
	full        string // owner/repo
	approvers   config.Approvers
	policies    map[string]config.Approvals // per environment, see WithApprovals
}

// MayApprove checks login against env's approvers rule (see rule): at least its minPermission on the
// repository, or active membership in one of its teams ("org/slug").
func (a *Approvers) MayApprove(ctx context.Context, env, login string) (Decision, error) {
	d, role, err := a.mayApprove(ctx, env, login, a.rule(env))
	if err != nil || d.Allowed {
		return d, err
	}
	return Decision{Why: fmt.Sprintf("%s has %s on %s; %s", mention(login), role, a.full, a.ApproverRule(env))}, nil
}

// MayApproveRule decides whether login passes rule (a repository permission, or membership of one of its
// teams), as MayApprove does for an environment's own rule: the daemon asks it with the teams and
// minPermission of the approval rules that apply to a plan.
func (a *Approvers) MayApproveRule(ctx context.Context, env, login string, rule config.Approvers) (Decision, error) {
	d, role, err := a.mayApprove(ctx, env, login, rule)
	if err != nil || d.Allowed {
		return d, err
	}
	return Decision{Why: fmt.Sprintf("%s has %s on %s and is in none of the teams %s", mention(login), role, a.full, strings.Join(rule.Teams, ", "))}, nil
}

// mayApprove is MayApprove with the rule given; a refusal comes back with login's role ("no access" for
// none) for the caller's words.
func (a *Approvers) mayApprove(ctx context.Context, env, login string, rule config.Approvers) (Decision, string, error) {
	role, err := a.role(ctx, login)
	if err != nil {
		return Decision{}, "", err
	}
	if rule.MinPermission != "" && permissionRank(role) >= permissionRank(rule.MinPermission) && permissionRank(role) > 0 {
		return Decision{Allowed: true, Why: fmt.Sprintf("%s on %s", role, a.full)}, role, nil
	}
	for _, team := range rule.Teams {
		org, slug, ok := strings.Cut(team, "/")
		if !ok {
			return Decision{}, "", fmt.Errorf("approvers of %s: team %q is not org/slug", env, team)
		}
		m, resp, err := a.rest.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			continue
		}
		if err != nil {
			return Decision{}, "", fmt.Errorf("checking %s's membership of team %s: %w", login, team, err)
		}
		if m.GetState() == "active" {
			return Decision{Allowed: true, Why: "member of " + team}, role, nil
		}
	}
	if role == "" {
		role = "no access"
	}
	return Decision{}, role, nil
}

// ApproverRule says in words who may approve env's plans.
func (a *Approvers) ApproverRule(env string) string {
	rule := a.rule(env)
	need := "approving " + env + " needs "
	switch {
	case rule.MinPermission != "" && len(rule.Teams) > 0:
		return fmt.Sprintf("%s%s permission or higher on %s, or membership of %s", need, rule.MinPermission, a.full, strings.Join(rule.Teams, ", "))
	case rule.MinPermission != "":
		return fmt.Sprintf("%s%s permission or higher on %s", need, rule.MinPermission, a.full)
	}
	return need + "membership of " + strings.Join(rule.Teams, ", ")
}

// rule is env's approvers rule: the environment's own (WithApprovals) or github.approvers.
func (a *Approvers) rule(env string) config.Approvers {
	if p, ok := a.policies[env]; ok {
		return config.Approvers{MinPermission: p.MinPermission, Teams: p.Teams}
	}
	return a.approvers
}

// role returns login's role on the repository (role_name: read, triage, write, maintain, admin or a custom
// role's base), falling back to the coarse permission field when GitHub sends no role_name.
func (a *Approvers) role(ctx context.Context, login string) (string, error) {
	req, err := a.rest.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", a.owner, a.repo, login), nil)
	if err != nil {
		return "", fmt.Errorf("building permission request: %w", err)
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	resp, err := a.rest.Do(ctx, req, &out)
	var ge *gh.ErrorResponse
	if resp != nil && resp.StatusCode == http.StatusNotFound && errors.As(err, &ge) {
		return "", nil // not a user, or not visible: no access
	}
	if err != nil {
		return "", fmt.Errorf("reading %s's permission on %s: %w", login, a.full, err)
	}
	if permissionRank(out.RoleName) > 0 {
		return out.RoleName, nil
	}
	if permissionRank(out.Permission) > 0 {
		return out.Permission, nil
	}
	return "", nil
}

// MayRead reports whether login may see the reconciler's environments (the
// web page): any role on the repository, read or higher.
func (a *Approvers) MayRead(ctx context.Context, login string) (Decision, error) {
	role, err := a.role(ctx, login)
	if err != nil {
		return Decision{}, err
	}
	if permissionRank(role) > 0 {
		return Decision{Allowed: true, Why: fmt.Sprintf("%s on %s", role, a.full)}, nil
	}
	return Decision{Why: fmt.Sprintf("%s has no access to %s", mention(login), a.full)}, nil
}
