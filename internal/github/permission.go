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

// MayApprove checks login against env's approvers rule (see rule): at least its minPermission on the
// repository, or active membership in one of its teams ("org/slug").
func (c *Client) MayApprove(ctx context.Context, env, login string) (Decision, error) {
	d, role, err := c.mayApprove(ctx, env, login, c.rule(env))
	if err != nil || d.Allowed {
		return d, err
	}
	return Decision{Why: fmt.Sprintf("%s has %s on %s; %s", mention(login), role, c.Repo(), c.ApproverRule(env))}, nil
}

// MayApproveRule decides whether login passes rule (a repository permission, or membership of one of its
// teams), as MayApprove does for an environment's own rule: the daemon asks it with the teams and
// minPermission of the approval rules that apply to a plan.
func (c *Client) MayApproveRule(ctx context.Context, env, login string, rule config.Approvers) (Decision, error) {
	d, role, err := c.mayApprove(ctx, env, login, rule)
	if err != nil || d.Allowed {
		return d, err
	}
	return Decision{Why: fmt.Sprintf("%s has %s on %s and is in none of the teams %s", mention(login), role, c.Repo(), strings.Join(rule.Teams, ", "))}, nil
}

// mayApprove is MayApprove with the rule given; a refusal comes back with login's role ("no access" for
// none) for the caller's words.
func (c *Client) mayApprove(ctx context.Context, env, login string, rule config.Approvers) (Decision, string, error) {
	role, err := c.role(ctx, login)
	if err != nil {
		return Decision{}, "", err
	}
	if rule.MinPermission != "" && permissionRank(role) >= permissionRank(rule.MinPermission) && permissionRank(role) > 0 {
		return Decision{Allowed: true, Why: fmt.Sprintf("%s on %s", role, c.Repo())}, role, nil
	}
	for _, team := range rule.Teams {
		org, slug, ok := strings.Cut(team, "/")
		if !ok {
			return Decision{}, "", fmt.Errorf("approvers of %s: team %q is not org/slug", env, team)
		}
		m, resp, err := c.rest.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
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
func (c *Client) ApproverRule(env string) string {
	rule := c.rule(env)
	need := "approving " + env + " needs "
	switch {
	case rule.MinPermission != "" && len(rule.Teams) > 0:
		return fmt.Sprintf("%s%s permission or higher on %s, or membership of %s", need, rule.MinPermission, c.Repo(), strings.Join(rule.Teams, ", "))
	case rule.MinPermission != "":
		return fmt.Sprintf("%s%s permission or higher on %s", need, rule.MinPermission, c.Repo())
	}
	return need + "membership of " + strings.Join(rule.Teams, ", ")
}

// rule is env's approvers rule: the environment's own (WithApprovals) or github.approvers.
func (c *Client) rule(env string) config.Approvers {
	if p, ok := c.policies[env]; ok {
		return config.Approvers{MinPermission: p.MinPermission, Teams: p.Teams}
	}
	return c.approvers
}

// role returns login's role on the repository (role_name: read, triage, write, maintain, admin or a custom
// role's base), falling back to the coarse permission field when GitHub sends no role_name.
func (c *Client) role(ctx context.Context, login string) (string, error) {
	req, err := c.rest.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", c.owner, c.repo, login), nil)
	if err != nil {
		return "", fmt.Errorf("building permission request: %w", err)
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	resp, err := c.rest.Do(ctx, req, &out)
	var ge *gh.ErrorResponse
	if resp != nil && resp.StatusCode == http.StatusNotFound && errors.As(err, &ge) {
		return "", nil // not a user, or not visible: no access
	}
	if err != nil {
		return "", fmt.Errorf("reading %s's permission on %s: %w", login, c.Repo(), err)
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
func (c *Client) MayRead(ctx context.Context, login string) (Decision, error) {
	role, err := c.role(ctx, login)
	if err != nil {
		return Decision{}, err
	}
	if permissionRank(role) > 0 {
		return Decision{Allowed: true, Why: fmt.Sprintf("%s on %s", role, c.Repo())}, nil
	}
	return Decision{Why: fmt.Sprintf("%s has no access to %s", mention(login), c.Repo())}, nil
}
