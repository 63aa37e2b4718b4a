package githubtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Deployment is the server's record of a deployment and its statuses.
type Deployment struct {
	ID          int64
	SHA         string
	Ref         string
	Task        string
	Environment string
	// OriginalEnvironment is the environment the deployment was created for; a status may move it.
	OriginalEnvironment string
	Description         string
	Payload             json.RawMessage
	Transient           bool
	Production          bool
	Created             time.Time
	// Statuses are oldest first.
	Statuses []DeploymentStatus
}

// DeploymentStatus is one status of a deployment.
type DeploymentStatus struct {
	ID             int64
	State          string
	Description    string
	Environment    string
	EnvironmentURL string
	LogURL         string
	Created        time.Time
}

// State is the deployment's latest status ("" when it has none).
func (d Deployment) State() string {
	if len(d.Statuses) == 0 {
		return ""
	}
	return d.Statuses[len(d.Statuses)-1].State
}

// Deployments returns every deployment of the repository, oldest first.
func (s Repo) Deployments() []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Deployment
	for _, d := range s.mustRepo(s.owner, s.name).deployments {
		c := *d
		c.Statuses = slices.Clone(d.Statuses)
		c.Payload = slices.Clone(d.Payload)
		out = append(out, c)
	}
	return out
}

func (s deploymentsAPI) routes() map[string]handler {
	return map[string]handler{
		"POST /repos/{owner}/{repo}/deployments":                          s.createDeployment,
		"GET /repos/{owner}/{repo}/deployments":                           s.listDeployments,
		"POST /repos/{owner}/{repo}/deployments/{deployment_id}/statuses": s.createDeploymentStatus,
		"GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses":  s.listDeploymentStatuses,
	}
}

// createDeployment creates a deployment as GitHub does: the ref must resolve; auto_merge (default true)
// refuses a ref behind the default branch with 409, as merging the default branch into a commit SHA cannot
// work; required_contexts (default: every context) refuses with 409 when a status of the commit is not
// success.
func (s deploymentsAPI) createDeployment(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct {
		Ref              string          `json:"ref"`
		Task             *string         `json:"task"`
		AutoMerge        *bool           `json:"auto_merge"`
		RequiredContexts *[]string       `json:"required_contexts"`
		Payload          json.RawMessage `json:"payload"`
		Environment      *string         `json:"environment"`
		Description      *string         `json:"description"`
		Transient        bool            `json:"transient_environment"`
		Production       *bool           `json:"production_environment"`
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	cm := r.resolve(in.Ref)
	if cm == nil {
		return errorf(http.StatusUnprocessableEntity, "No ref found for: %s", in.Ref)
	}
	if (in.AutoMerge == nil || *in.AutoMerge) && !r.isAncestor(r.branches[r.defaultBranch], cm.sha) {
		return errorf(http.StatusConflict, "Conflict merging %s into %s.", r.defaultBranch, in.Ref)
	}
	var required []string
	if in.RequiredContexts != nil {
		required = *in.RequiredContexts
	}
	for _, st := range r.latestStatuses(cm.sha) {
		if st.State != "success" && (in.RequiredContexts == nil || slices.Contains(required, st.Context)) {
			return errorf(http.StatusConflict, "Conflict: Commit status checks failed for %s.", in.Ref)
		}
	}
	d := &Deployment{ID: s.id(), SHA: cm.sha, Ref: in.Ref, Task: "deploy", Environment: "production",
		Transient: in.Transient, Created: time.Now(), Payload: json.RawMessage(`{}`)}
	if in.Task != nil {
		d.Task = *in.Task
	}
	if in.Environment != nil {
		d.Environment = *in.Environment
	}
	d.OriginalEnvironment = d.Environment
	d.Production = d.Environment == "production"
	if in.Production != nil {
		d.Production = *in.Production
	}
	if in.Description != nil {
		d.Description = *in.Description
	}
	if len(in.Payload) > 0 && string(in.Payload) != "null" {
		d.Payload = in.Payload
	}
	r.deployments = append(r.deployments, d)
	return ok(http.StatusCreated, s.deploymentJSON(r, d))
}

func (s deploymentsAPI) listDeployments(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	// Each filter's default in GitHub's description is "none", filled in by the request validation.
	var items []any
	for i := len(r.deployments) - 1; i >= 0; i-- { // newest first
		d := r.deployments[i]
		if q := c.query.Get("sha"); q != "" && q != "none" && q != d.SHA {
			continue
		}
		if q := c.query.Get("ref"); q != "" && q != "none" && q != d.Ref {
			continue
		}
		if q := c.query.Get("task"); q != "" && q != "none" && q != d.Task {
			continue
		}
		if q := c.query.Get("environment"); q != "" && q != "none" && q != d.Environment {
			continue
		}
		items = append(items, s.deploymentJSON(r, d))
	}
	return paged(c, items, list)
}

// createDeploymentStatus adds a status. Descriptions are capped at 140 characters as GitHub does; a
// success with auto_inactive (the default) marks the environment's earlier non-transient, non-production
// deployments whose latest status is success inactive.
func (s deploymentsAPI) createDeploymentStatus(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	d := r.deployment(c.params["deployment_id"])
	if d == nil {
		return errorf(http.StatusNotFound, "Not Found")
	}
	var in struct {
		State          string  `json:"state"`
		TargetURL      string  `json:"target_url"`
		LogURL         string  `json:"log_url"`
		Description    string  `json:"description"`
		Environment    *string `json:"environment"`
		EnvironmentURL string  `json:"environment_url"`
		AutoInactive   *bool   `json:"auto_inactive"`
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	if n := utf8.RuneCountInString(in.Description); n > 140 {
		return errorf(http.StatusUnprocessableEntity, "Validation Failed: description is too long (maximum is 140 characters, got %d)", n)
	}
	if in.Environment != nil && *in.Environment != "" {
		d.Environment = *in.Environment
	}
	logURL := in.LogURL
	if logURL == "" {
		logURL = in.TargetURL
	}
	st := DeploymentStatus{ID: s.id(), State: in.State, Description: in.Description, Environment: d.Environment,
		EnvironmentURL: in.EnvironmentURL, LogURL: logURL, Created: time.Now()}
	d.Statuses = append(d.Statuses, st)
	if in.State == "success" && (in.AutoInactive == nil || *in.AutoInactive) {
		for _, o := range r.deployments {
			if o != d && o.Environment == d.Environment && !o.Transient && !o.Production && o.State() == "success" {
				o.Statuses = append(o.Statuses, DeploymentStatus{ID: s.id(), State: "inactive", Environment: o.Environment, Created: time.Now()})
			}
		}
	}
	return ok(http.StatusCreated, s.deploymentStatusJSON(r, d, st))
}

func (s deploymentsAPI) listDeploymentStatuses(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	d := r.deployment(c.params["deployment_id"])
	if d == nil {
		return errorf(http.StatusNotFound, "Not Found")
	}
	var items []any
	for i := len(d.Statuses) - 1; i >= 0; i-- { // newest first
		items = append(items, s.deploymentStatusJSON(r, d, d.Statuses[i]))
	}
	return paged(c, items, list)
}

func (r *repo) deployment(id string) *Deployment {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	for _, d := range r.deployments {
		if d.ID == n {
			return d
		}
	}
	return nil
}

func (s deploymentsAPI) deploymentJSON(r *repo, d *Deployment) map[string]any {
	url := s.apiURL("/repos/%s/%s/deployments/%d", r.owner, r.name, d.ID)
	updated := d.Created
	if n := len(d.Statuses); n > 0 {
		updated = d.Statuses[n-1].Created
	}
	return map[string]any{
		"url": url, "id": d.ID, "node_id": "DE_" + strconv.FormatInt(d.ID, 10), "sha": d.SHA, "ref": d.Ref,
		"task": d.Task, "payload": d.Payload, "original_environment": d.OriginalEnvironment, "environment": d.Environment,
		"description": nullable(d.Description), "creator": s.user("stagehand[bot]"), "created_at": ts(d.Created),
		"updated_at": ts(updated), "statuses_url": url + "/statuses",
		"repository_url":        s.apiURL("/repos/%s/%s", r.owner, r.name),
		"transient_environment": d.Transient, "production_environment": d.Production,
	}
}

func (s deploymentsAPI) deploymentStatusJSON(r *repo, d *Deployment, st DeploymentStatus) map[string]any {
	dep := s.apiURL("/repos/%s/%s/deployments/%d", r.owner, r.name, d.ID)
	return map[string]any{
		"url": dep + "/statuses/" + strconv.FormatInt(st.ID, 10), "id": st.ID, "node_id": "DES_" + strconv.FormatInt(st.ID, 10),
		"state": st.State, "creator": s.user("stagehand[bot]"), "description": st.Description, "environment": st.Environment,
		"target_url": st.LogURL, "log_url": st.LogURL, "environment_url": st.EnvironmentURL,
		"created_at": ts(st.Created), "updated_at": ts(st.Created), "deployment_url": dep,
		"repository_url": s.apiURL("/repos/%s/%s", r.owner, r.name),
	}
}

func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// deploymentsAPI emulates deployments and their statuses.
type deploymentsAPI struct{ *world }
