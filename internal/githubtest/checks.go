package githubtest

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// CheckRun is the server's record of a check run.
type CheckRun struct {
	ID          int64
	Name        string
	HeadSHA     string
	Status      string // queued, in_progress, completed
	Conclusion  string // "" until completed
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	Actions     []Action
	StartedAt   time.Time
	CompletedAt time.Time
	// Updates counts the PATCH requests applied to the run.
	Updates int
	// AppID is the GitHub App that made the run: the server's own App for
	// runs created through the API; 0 (app: null) unless set for AddCheckRun.
	AppID int64
}

// Action is a check run's requested-action button.
type Action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// CheckRuns returns every check run of the repository, oldest first.
func (s Repo) CheckRuns() []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, cr := range s.mustRepo(s.owner, s.name).checkRuns {
		c := *cr
		c.Actions = slices.Clone(cr.Actions)
		out = append(out, c)
	}
	return out
}

// CheckRun returns one check run by id.
func (s Repo) CheckRun(id int64) (CheckRun, bool) {
	for _, cr := range s.CheckRuns() {
		if cr.ID == id {
			return cr, true
		}
	}
	return CheckRun{}, false
}

// AddCheckRun records a check run as another app's CI would, e.g. a completed success for auto-merge tests.
func (s Repo) AddCheckRun(cr CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	cr.ID = s.id()
	if cr.Status == "" {
		cr.Status = "completed"
	}
	r.checkRuns = append(r.checkRuns, &cr)
	return cr.ID
}

type checkRunInput struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
	Actions *[]Action `json:"actions"`
}

// apply merges the input into cr the way GitHub does: a conclusion completes the run; a status other than
// completed reopens it.
func (in *checkRunInput) apply(cr *CheckRun) *response {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&cr.Name, in.Name)
	set(&cr.DetailsURL, in.DetailsURL)
	set(&cr.ExternalID, in.ExternalID)
	if in.Output != nil {
		cr.Title, cr.Summary, cr.Text = in.Output.Title, in.Output.Summary, in.Output.Text
	}
	if in.Actions != nil {
		cr.Actions = *in.Actions
	}
	if in.StartedAt != nil {
		cr.StartedAt = *in.StartedAt
	}
	if in.Status != nil {
		cr.Status = *in.Status
		if cr.Status != "completed" {
			cr.Conclusion, cr.CompletedAt = "", time.Time{}
		}
	}
	if in.Conclusion != nil {
		cr.Conclusion, cr.Status = *in.Conclusion, "completed"
	}
	if cr.Status == "completed" && cr.Conclusion == "" {
		res := errorf(http.StatusUnprocessableEntity, "Invalid request.\n\nNo conclusion given for a completed check run.")
		return &res
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = time.Now().UTC()
		if in.CompletedAt != nil {
			cr.CompletedAt = *in.CompletedAt
		}
	}
	return nil
}

func (s checksAPI) checkRunJSON(r *repo, cr *CheckRun) map[string]any {
	full := r.owner + "/" + r.name
	var conclusion, completed any
	if cr.Conclusion != "" {
		conclusion = cr.Conclusion
	}
	if !cr.CompletedAt.IsZero() {
		completed = ts(cr.CompletedAt)
	}
	var text any
	if cr.Text != "" {
		text = cr.Text
	}
	var title any
	if cr.Title != "" {
		title = cr.Title
	}
	var summary any
	if cr.Summary != "" {
		summary = cr.Summary
	}
	return map[string]any{
		"id": cr.ID, "node_id": "CR_" + strconv.FormatInt(cr.ID, 10), "name": cr.Name, "head_sha": cr.HeadSHA,
		"external_id": cr.ExternalID, "details_url": cr.DetailsURL, "status": cr.Status, "conclusion": conclusion,
		"started_at": ts(cr.StartedAt), "completed_at": completed,
		"url":      s.apiURL("/repos/%s/check-runs/%d", full, cr.ID),
		"html_url": s.htmlURL("/%s/runs/%d", full, cr.ID),
		"output": map[string]any{
			"title": title, "summary": summary, "text": text, "annotations_count": 0,
			"annotations_url": s.apiURL("/repos/%s/check-runs/%d/annotations", full, cr.ID),
		},
		"check_suite":   map[string]any{"id": cr.ID},
		"app":           s.appJSON(cr.AppID),
		"pull_requests": []any{},
	}
}

func (s checksAPI) createCheckRun(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in checkRunInput
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	if r.commits[*in.HeadSHA] == nil {
		return errorf(http.StatusUnprocessableEntity, "No commit found for SHA: %s", *in.HeadSHA)
	}
	cr := &CheckRun{ID: s.id(), HeadSHA: *in.HeadSHA, Status: "queued", StartedAt: time.Now().UTC(), AppID: s.appID}
	if res := in.apply(cr); res != nil {
		return *res
	}
	r.checkRuns = append(r.checkRuns, cr)
	return ok(http.StatusCreated, s.checkRunJSON(r, cr))
}

func (s checksAPI) findCheckRun(c *call) (*repo, *CheckRun, *response) {
	r, e := c.repo()
	if e != nil {
		return nil, nil, e
	}
	id, _ := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	for _, cr := range r.checkRuns {
		if cr.ID == id {
			return r, cr, nil
		}
	}
	res := errorf(http.StatusNotFound, "Not Found")
	return nil, nil, &res
}

func (s checksAPI) getCheckRun(c *call) response {
	r, cr, e := s.findCheckRun(c)
	if e != nil {
		return *e
	}
	return ok(http.StatusOK, s.checkRunJSON(r, cr))
}

func (s checksAPI) updateCheckRun(c *call) response {
	r, cr, e := s.findCheckRun(c)
	if e != nil {
		return *e
	}
	var in checkRunInput
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	next := *cr
	if res := in.apply(&next); res != nil {
		return *res
	}
	next.Updates++
	*cr = next
	return ok(http.StatusOK, s.checkRunJSON(r, cr))
}

func (s checksAPI) listCheckRuns(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	cm := r.resolve(c.params["ref"])
	if cm == nil {
		return errorf(http.StatusUnprocessableEntity, "No commit found for SHA: %s", c.params["ref"])
	}
	name, status := c.query.Get("check_name"), c.query.Get("status")
	latest := c.query.Get("filter") != "all"
	seen := map[string]bool{}
	var runs []any
	for i := len(r.checkRuns) - 1; i >= 0; i-- { // newest first, as GitHub lists them
		cr := r.checkRuns[i]
		if cr.HeadSHA != cm.sha || (name != "" && cr.Name != name) || (status != "" && cr.Status != status) {
			continue
		}
		if latest && seen[cr.Name] {
			continue
		}
		seen[cr.Name] = true
		runs = append(runs, s.checkRunJSON(r, cr))
	}
	total := len(runs)
	return paged(c, runs, func(page []any) any { return map[string]any{"total_count": total, "check_runs": page} })
}

// paged answers one page of items as GitHub does: per_page (default 30, at most 100) and page query
// parameters, and a Link header with the next and last pages when there are more.
func paged(c *call, items []any, wrap func(page []any) any) response {
	per, _ := strconv.Atoi(c.query.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	n, _ := strconv.Atoi(c.query.Get("page"))
	if n <= 0 {
		n = 1
	}
	last := max((len(items)+per-1)/per, 1)
	start := min((n-1)*per, len(items))
	out := orEmpty(items[start:min(start+per, len(items))])
	res := ok(http.StatusOK, wrap(out))
	if n < last {
		link := func(p int) string {
			q := url.Values{}
			for k, v := range c.query {
				q[k] = v
			}
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(per))
			return "<" + c.w.root + c.path + "?" + q.Encode() + ">"
		}
		res.header = http.Header{"Link": {link(n+1) + `; rel="next", ` + link(last) + `; rel="last"`}}
	}
	return res
}

func list(page []any) any { return page }

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// appJSON is the GitHub App with id as check runs show it; nil for 0.
func (s checksAPI) appJSON(id int64) any {
	if id == 0 {
		return nil
	}
	slug := "stagehand"
	if id != s.appID {
		slug = "app-" + strconv.FormatInt(id, 10)
	}
	return map[string]any{
		"id": id, "slug": slug, "node_id": "A_" + slug, "owner": s.user("acme"), "name": slug, "description": nil,
		"external_url": s.htmlURL("/apps/%s", slug), "html_url": s.htmlURL("/apps/%s", slug),
		"created_at": ts(time.Unix(0, 0)), "updated_at": ts(time.Unix(0, 0)),
		"permissions": map[string]any{"checks": "write", "metadata": "read"}, "events": []any{"check_run"},
	}
}

// checksAPI emulates check runs and commit statuses.
type checksAPI struct{ *world }
