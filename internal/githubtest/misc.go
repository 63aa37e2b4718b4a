package githubtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Status is a commit status (the statuses API, used by CI systems other than Actions).
type Status struct {
	ID          int64
	State       string // error, failure, pending, success
	Context     string
	Description string
	TargetURL   string
	Created     time.Time
}

// Comment is an issue or pull request comment.
type Comment struct {
	ID     int64
	Issue  int
	Body   string
	Author string
}

// SetStatus records a commit status as another CI system would.
func (s Repo) SetStatus(sha, context, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	r.statuses[sha] = append(r.statuses[sha], &Status{ID: s.id(), State: state, Context: context, Created: time.Now()})
}

// Comments returns the comments on an issue or pull request, oldest first.
func (s Repo) Comments(number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.mustRepo(s.owner, s.name).comments {
		if c.Issue == number {
			out = append(out, *c)
		}
	}
	return out
}

func (s checksAPI) statusJSON(r *repo, st *Status) map[string]any {
	opt := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	return map[string]any{
		"id": st.ID, "node_id": "S_" + strconv.FormatInt(st.ID, 10), "state": st.State, "context": st.Context,
		"description": opt(st.Description), "target_url": opt(st.TargetURL), "avatar_url": nil,
		"url": s.apiURL("/repos/%s/%s/statuses/%d", r.owner, r.name, st.ID), "creator": s.user("ci"),
		"created_at": ts(st.Created), "updated_at": ts(st.Created),
	}
}

func (s checksAPI) createStatus(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	sha := c.params["sha"]
	if r.commits[sha] == nil {
		return errorf(http.StatusUnprocessableEntity, "No commit found for SHA: %s", sha)
	}
	if in.Context == "" {
		in.Context = "default"
	}
	st := &Status{ID: s.id(), State: in.State, Context: in.Context, Description: in.Description, TargetURL: in.TargetURL, Created: time.Now()}
	r.statuses[sha] = append(r.statuses[sha], st)
	return ok(http.StatusCreated, s.statusJSON(r, st))
}

// latestStatuses returns the newest status per context, newest first.
func (r *repo) latestStatuses(sha string) []*Status {
	seen := map[string]bool{}
	var out []*Status
	all := r.statuses[sha]
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].Context] {
			seen[all[i].Context] = true
			out = append(out, all[i])
		}
	}
	return out
}

func (s checksAPI) combinedStatus(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	cm := r.resolve(c.params["ref"])
	if cm == nil {
		return errorf(http.StatusNotFound, "No commit found for SHA: %s", c.params["ref"])
	}
	latest := r.latestStatuses(cm.sha)
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	items := []any{}
	for _, st := range latest {
		switch st.State {
		case "error", "failure":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
		items = append(items, s.statusJSON(r, st))
	}
	return ok(http.StatusOK, map[string]any{
		"state": state, "statuses": items, "sha": cm.sha, "total_count": len(items), "repository": s.repoJSON(r),
		"commit_url": s.apiURL("/repos/%s/%s/commits/%s", r.owner, r.name, cm.sha),
		"url":        s.apiURL("/repos/%s/%s/commits/%s/status", r.owner, r.name, cm.sha),
	})
}

func (s checksAPI) listStatuses(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	cm := r.resolve(c.params["ref"])
	if cm == nil {
		return errorf(http.StatusNotFound, "No commit found for SHA: %s", c.params["ref"])
	}
	var out []any
	all := r.statuses[cm.sha]
	for i := len(all) - 1; i >= 0; i-- {
		out = append(out, s.statusJSON(r, all[i]))
	}
	return paged(c, out, list)
}

func (s issuesAPI) commentJSON(r *repo, cm *Comment) map[string]any {
	full := r.owner + "/" + r.name
	return map[string]any{
		"id": cm.ID, "node_id": "IC_" + strconv.FormatInt(cm.ID, 10), "body": cm.Body, "user": s.user(cm.Author),
		"url":        s.apiURL("/repos/%s/issues/comments/%d", full, cm.ID),
		"html_url":   s.htmlURL("/%s/issues/%d#issuecomment-%d", full, cm.Issue, cm.ID),
		"issue_url":  s.apiURL("/repos/%s/issues/%d", full, cm.Issue),
		"created_at": ts(time.Now()), "updated_at": ts(time.Now()), "author_association": "NONE",
	}
}

func (s issuesAPI) listComments(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	n, _ := strconv.Atoi(c.params["issue_number"])
	var out []any
	for _, cm := range r.comments {
		if cm.Issue == n {
			out = append(out, s.commentJSON(r, cm))
		}
	}
	return paged(c, out, list)
}

func (s issuesAPI) createComment(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct{ Body string }
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !slices.ContainsFunc(r.pulls, func(p *pull) bool { return p.number == n }) {
		return errorf(http.StatusNotFound, "Not Found")
	}
	cm := &Comment{ID: s.id(), Issue: n, Body: in.Body, Author: "stagehand[bot]"}
	r.comments = append(r.comments, cm)
	return ok(http.StatusCreated, s.commentJSON(r, cm))
}

func (s issuesAPI) findComment(c *call) (*repo, int, *response) {
	r, e := c.repo()
	if e != nil {
		return nil, 0, e
	}
	id, _ := strconv.ParseInt(c.params["comment_id"], 10, 64)
	for i, cm := range r.comments {
		if cm.ID == id {
			return r, i, nil
		}
	}
	res := errorf(http.StatusNotFound, "Not Found")
	return nil, 0, &res
}

func (s issuesAPI) getComment(c *call) response {
	r, i, e := s.findComment(c)
	if e != nil {
		return *e
	}
	return ok(http.StatusOK, s.commentJSON(r, r.comments[i]))
}

func (s issuesAPI) updateComment(c *call) response {
	r, i, e := s.findComment(c)
	if e != nil {
		return *e
	}
	var in struct{ Body string }
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	r.comments[i].Body = in.Body
	return ok(http.StatusOK, s.commentJSON(r, r.comments[i]))
}

func (s issuesAPI) deleteComment(c *call) response {
	r, i, e := s.findComment(c)
	if e != nil {
		return *e
	}
	r.comments = slices.Delete(r.comments, i, i+1)
	return response{status: http.StatusNoContent}
}

func (s issuesAPI) labelJSON(r *repo, name string) map[string]any {
	return map[string]any{
		"id": userID("label:" + name), "node_id": "L_" + name, "name": name, "color": "ededed", "default": false,
		"description": nil, "url": s.apiURL("/repos/%s/%s/labels/%s", r.owner, r.name, name),
	}
}

func (s issuesAPI) labelsResponse(r *repo, n int) response {
	out := []any{}
	for _, l := range r.labels[n] {
		out = append(out, s.labelJSON(r, l))
	}
	return ok(http.StatusOK, out)
}

// labelNames accepts the request shapes GitHub documents: {"labels": [...]}, [...] or "name".
func labelNames(body []byte) []string {
	var obj struct{ Labels []json.RawMessage }
	var arr []json.RawMessage
	var items []json.RawMessage
	if json.Unmarshal(body, &obj) == nil && obj.Labels != nil {
		items = obj.Labels
	} else if json.Unmarshal(body, &arr) == nil {
		items = arr
	} else {
		items = []json.RawMessage{body}
	}
	var names []string
	for _, it := range items {
		var n string
		if json.Unmarshal(it, &n) != nil {
			var o struct{ Name string }
			_ = json.Unmarshal(it, &o)
			n = o.Name
		}
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

func (s issuesAPI) issueNumber(c *call) (*repo, int, *response) {
	r, e := c.repo()
	if e != nil {
		return nil, 0, e
	}
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !slices.ContainsFunc(r.pulls, func(p *pull) bool { return p.number == n }) {
		res := errorf(http.StatusNotFound, "Not Found")
		return nil, 0, &res
	}
	return r, n, nil
}

func (s issuesAPI) listLabels(c *call) response {
	r, n, e := s.issueNumber(c)
	if e != nil {
		return *e
	}
	return s.labelsResponse(r, n)
}

func (s issuesAPI) addLabels(c *call) response {
	r, n, e := s.issueNumber(c)
	if e != nil {
		return *e
	}
	for _, l := range labelNames(c.body) {
		if !slices.Contains(r.labels[n], l) {
			r.labels[n] = append(r.labels[n], l)
		}
	}
	return s.labelsResponse(r, n)
}

func (s issuesAPI) setLabels(c *call) response {
	r, n, e := s.issueNumber(c)
	if e != nil {
		return *e
	}
	r.labels[n] = labelNames(c.body)
	return s.labelsResponse(r, n)
}

func (s issuesAPI) clearLabels(c *call) response {
	r, n, e := s.issueNumber(c)
	if e != nil {
		return *e
	}
	delete(r.labels, n)
	return response{status: http.StatusNoContent}
}

// legacyPermission maps a role to the coarse permission GitHub reports next to role_name.
func legacyPermission(role string) string {
	switch role {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	}
	return "read"
}

func (s accessAPI) getPermission(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	login := c.params["username"]
	role, found := r.collaborators[login]
	if !found {
		u := s.user(login)
		u["role_name"] = "none"
		return ok(http.StatusOK, map[string]any{"permission": "none", "role_name": "none", "user": u})
	}
	u := s.user(login)
	u["role_name"] = role
	return ok(http.StatusOK, map[string]any{"permission": legacyPermission(role), "role_name": role, "user": u})
}

func (s accessAPI) membershipJSON(org, slug, login, role string) map[string]any {
	return map[string]any{"url": s.apiURL("/orgs/%s/teams/%s/memberships/%s", org, slug, login), "role": role, "state": "active"}
}

func (s accessAPI) getMembership(c *call) response {
	org, slug, login := c.params["org"], c.params["team_slug"], c.params["username"]
	role, found := s.teams[org+"/"+slug][login]
	if !found {
		return errorf(http.StatusNotFound, "Not Found")
	}
	return ok(http.StatusOK, s.membershipJSON(org, slug, login, role))
}

func (s accessAPI) putMembership(c *call) response {
	org, slug, login := c.params["org"], c.params["team_slug"], c.params["username"]
	var in struct{ Role string }
	if len(c.body) > 0 {
		_ = c.decode(&in)
	}
	if in.Role == "" {
		in.Role = "member"
	}
	if s.teams[org+"/"+slug] == nil {
		s.teams[org+"/"+slug] = map[string]string{}
	}
	s.teams[org+"/"+slug][login] = in.Role
	return ok(http.StatusOK, s.membershipJSON(org, slug, login, in.Role))
}

func (s accessAPI) deleteMembership(c *call) response {
	delete(s.teams[c.params["org"]+"/"+c.params["team_slug"]], c.params["username"])
	return response{status: http.StatusNoContent}
}

func (s accessAPI) installationJSON() map[string]any {
	return map[string]any{
		"id": s.instID, "app_id": s.appID, "app_slug": "stagehand", "target_id": 1, "target_type": "Organization",
		"account": s.user("acme"), "repository_selection": "all", "permissions": map[string]any{"checks": "write", "contents": "write", "pull_requests": "write", "metadata": "read"},
		"events": []any{"check_run", "pull_request", "push"}, "created_at": ts(time.Unix(0, 0)), "updated_at": ts(time.Unix(0, 0)),
		"access_tokens_url": s.apiURL("/app/installations/%d/access_tokens", s.instID),
		"repositories_url":  s.apiURL("/installation/repositories"),
		"html_url":          s.htmlURL("/settings/installations/%d", s.instID),
	}
}

func (s accessAPI) getInstallation(c *call) response {
	if _, e := c.repo(); e != nil {
		return *e
	}
	return ok(http.StatusOK, s.installationJSON())
}

// issuesAPI emulates issue and pull request comments and labels.
type issuesAPI struct{ *world }

// accessAPI emulates who may do what: collaborator permissions, team memberships, the App's installation
// and the user a user token belongs to.
type accessAPI struct{ *world }
