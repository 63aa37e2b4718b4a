package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"
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

// MayApprove checks login against the approvers rule: at least github.approvers.minPermission on the
// repository, or active membership in one of github.approvers.teams ("org/slug").
func (c *Client) MayApprove(ctx context.Context, login string) (Decision, error) {
	role, err := c.role(ctx, login)
	if err != nil {
		return Decision{}, err
	}
	if permissionRank(role) >= permissionRank(c.approvers.MinPermission) && permissionRank(role) > 0 {
		return Decision{Allowed: true, Why: fmt.Sprintf("%s on %s", role, c.Repo())}, nil
	}
	for _, team := range c.approvers.Teams {
		org, slug, ok := strings.Cut(team, "/")
		if !ok {
			return Decision{}, fmt.Errorf("github.approvers.teams: %q is not org/slug", team)
		}
		m, resp, err := c.rest.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			continue
		}
		if err != nil {
			return Decision{}, fmt.Errorf("checking %s's membership of team %s: %w", login, team, err)
		}
		if m.GetState() == "active" {
			return Decision{Allowed: true, Why: "member of " + team}, nil
		}
	}
	if role == "" {
		role = "no access"
	}
	return Decision{Why: fmt.Sprintf("%s has %s on %s; %s", mention(login), role, c.Repo(), c.ApproverRule())}, nil
}

// ApproverRule says in words who may approve.
func (c *Client) ApproverRule() string {
	s := fmt.Sprintf("approving needs %s permission or higher on %s", c.approvers.MinPermission, c.Repo())
	if len(c.approvers.Teams) > 0 {
		s += ", or membership of " + strings.Join(c.approvers.Teams, ", ")
	}
	return s
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
