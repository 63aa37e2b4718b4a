package githubtest

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

type pull struct {
	number                  int
	title, body             string
	head, base              string // branch names
	state                   string // open, closed
	draft                   bool
	merged                  bool
	mergeSHA                string
	headSHA                 string // frozen at close/merge; live branch head while open
	created, updated        time.Time
	closedAt, mergedAt      time.Time
	author, mergedBy        string
	mergeMethod, mergeTitle string
}

// PullRequest is the server's record of a pull request.
type PullRequest struct {
	Number      int
	Title, Body string
	Head, Base  string // branch names
	HeadSHA     string
	State       string // open, closed
	Draft       bool
	Merged      bool
	MergeSHA    string
	MergeMethod string
	Labels      []string
}

// PullRequests returns every pull request of the repository in creation order.
func (s Repo) PullRequests() []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	var out []PullRequest
	for _, p := range r.pulls {
		out = append(out, PullRequest{
			Number: p.number, Title: p.title, Body: p.body, Head: p.head, Base: p.base, HeadSHA: r.pullHead(p),
			State: p.state, Draft: p.draft, Merged: p.merged, MergeSHA: p.mergeSHA, MergeMethod: p.mergeMethod,
			Labels: slices.Clone(r.labels[p.number]),
		})
	}
	return out
}

// OpenPullRequest opens a pull request as a person would (head and base are branch names) and returns its number.
func (s Repo) OpenPullRequest(head, base, title, author string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	p := &pull{number: r.nextNumber(), title: title, head: head, base: base, state: "open", author: author, created: time.Now(), updated: time.Now()}
	r.pulls = append(r.pulls, p)
	return p.number
}

func (r *repo) nextNumber() int {
	n := 1
	for _, p := range r.pulls {
		n = max(n, p.number+1)
	}
	return n
}

func (r *repo) pullHead(p *pull) string {
	if p.state == "open" {
		if sha, ok := r.branches[p.head]; ok {
			return sha
		}
	}
	return p.headSHA
}

func (s pullsAPI) pullJSON(r *repo, p *pull) map[string]any {
	full := r.owner + "/" + r.name
	branch := func(b, sha string) map[string]any {
		return map[string]any{"label": r.owner + ":" + b, "ref": b, "sha": sha, "user": s.user(r.owner), "repo": s.repoJSON(r)}
	}
	t := func(x time.Time) any {
		if x.IsZero() {
			return nil
		}
		return ts(x)
	}
	var mergeSHA any
	if p.mergeSHA != "" {
		mergeSHA = p.mergeSHA
	}
	author := p.author
	if author == "" {
		author = "stagehand[bot]"
	}
	labels := []any{}
	for _, l := range r.labels[p.number] {
		labels = append(labels, issuesAPI(s).labelJSON(r, l))
	}
	var body any
	if p.body != "" {
		body = p.body
	}
	var mergedBy any
	if p.mergedBy != "" {
		mergedBy = s.user(p.mergedBy)
	}
	self := s.apiURL("/repos/%s/pulls/%d", full, p.number)
	return map[string]any{
		"id": int64(p.number) + r.id*1000, "node_id": "PR_" + strconv.Itoa(p.number), "number": p.number, "state": p.state,
		"locked": false, "title": p.title, "body": body, "user": s.user(author), "draft": p.draft,
		"head": branch(p.head, r.pullHead(p)), "base": branch(p.base, r.branches[p.base]),
		"merged": p.merged, "mergeable": nil, "merge_commit_sha": mergeSHA, "merged_by": mergedBy,
		"created_at": ts(p.created), "updated_at": ts(p.updated), "closed_at": t(p.closedAt), "merged_at": t(p.mergedAt),
		"labels": labels, "url": self, "html_url": s.htmlURL("/%s/pull/%d", full, p.number),
		"diff_url": s.htmlURL("/%s/pull/%d.diff", full, p.number), "patch_url": s.htmlURL("/%s/pull/%d.patch", full, p.number),
		"issue_url":           s.apiURL("/repos/%s/issues/%d", full, p.number),
		"commits_url":         self + "/commits",
		"review_comments_url": self + "/comments",
		"comments_url":        s.apiURL("/repos/%s/issues/%d/comments", full, p.number),
		"statuses_url":        s.apiURL("/repos/%s/statuses/%s", full, r.pullHead(p)),
		"author_association":  "OWNER",
		"_links": map[string]any{
			"self": map[string]any{"href": self}, "html": map[string]any{"href": s.htmlURL("/%s/pull/%d", full, p.number)},
			"issue": map[string]any{"href": s.apiURL("/repos/%s/issues/%d", full, p.number)}, "comments": map[string]any{"href": self + "/comments"},
			"review_comments": map[string]any{"href": self + "/comments"}, "review_comment": map[string]any{"href": self + "/comments{/number}"},
			"commits": map[string]any{"href": self + "/commits"}, "statuses": map[string]any{"href": s.apiURL("/repos/%s/statuses/%s", full, r.pullHead(p))},
		},
	}
}

// headBranch accepts "branch" or "owner:branch" for the repository's own owner.
func headBranch(r *repo, head string) (string, bool) {
	if o, b, found := strings.Cut(head, ":"); found {
		return b, o == r.owner
	}
	return head, true
}

func (s pullsAPI) listPulls(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	state := c.query.Get("state")
	if state == "" {
		state = "open"
	}
	head, base := c.query.Get("head"), c.query.Get("base")
	var out []any
	for _, p := range r.pulls {
		if state != "all" && p.state != state {
			continue
		}
		if head != "" {
			if b, own := headBranch(r, head); !own || b != p.head {
				continue
			}
		}
		if base != "" && p.base != base {
			continue
		}
		out = append(out, s.pullJSON(r, p))
	}
	slices.Reverse(out) // newest first, GitHub's default sort
	return paged(c, out, list)
}

func (s pullsAPI) findPull(c *call) (*repo, *pull, *response) {
	r, e := c.repo()
	if e != nil {
		return nil, nil, e
	}
	n, _ := strconv.Atoi(c.params["pull_number"])
	for _, p := range r.pulls {
		if p.number == n {
			return r, p, nil
		}
	}
	res := errorf(http.StatusNotFound, "Not Found")
	return nil, nil, &res
}

func (s pullsAPI) createPull(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	head, own := headBranch(r, in.Head)
	hs, hok := r.branches[head]
	bs, bok := r.branches[in.Base]
	switch {
	case !own || !hok:
		return errorf(http.StatusUnprocessableEntity, "Validation Failed: head %q invalid", in.Head)
	case !bok:
		return errorf(http.StatusUnprocessableEntity, "Validation Failed: base %q invalid", in.Base)
	case r.isAncestor(hs, bs):
		return errorf(http.StatusUnprocessableEntity, "Validation Failed: No commits between %s and %s", in.Base, in.Head)
	}
	for _, p := range r.pulls {
		if p.state == "open" && p.head == head && p.base == in.Base {
			return errorf(http.StatusUnprocessableEntity, "Validation Failed: A pull request already exists for %s:%s.", r.owner, head)
		}
	}
	p := &pull{number: r.nextNumber(), title: in.Title, body: in.Body, head: head, base: in.Base, state: "open", draft: in.Draft, created: time.Now(), updated: time.Now()}
	r.pulls = append(r.pulls, p)
	return ok(http.StatusCreated, s.pullJSON(r, p))
}

func (s pullsAPI) getPull(c *call) response {
	r, p, e := s.findPull(c)
	if e != nil {
		return *e
	}
	return ok(http.StatusOK, s.pullJSON(r, p))
}

func (s pullsAPI) updatePull(c *call) response {
	r, p, e := s.findPull(c)
	if e != nil {
		return *e
	}
	var in struct {
		Title, Body, State, Base *string
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	if in.Title != nil {
		p.title = *in.Title
	}
	if in.Body != nil {
		p.body = *in.Body
	}
	if in.Base != nil {
		if _, found := r.branches[*in.Base]; !found {
			return errorf(http.StatusUnprocessableEntity, "Validation Failed: base %q invalid", *in.Base)
		}
		p.base = *in.Base
	}
	if in.State != nil && *in.State != p.state {
		if p.merged {
			return errorf(http.StatusUnprocessableEntity, "Validation Failed: cannot change the state of a merged pull request")
		}
		if *in.State == "closed" {
			p.headSHA, p.closedAt = r.pullHead(p), time.Now()
		} else {
			p.closedAt = time.Time{}
		}
		p.state = *in.State
	}
	p.updated = time.Now()
	return ok(http.StatusOK, s.pullJSON(r, p))
}

func (s pullsAPI) mergePull(c *call) response {
	r, p, e := s.findPull(c)
	if e != nil {
		return *e
	}
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if len(c.body) > 0 {
		if err := c.decode(&in); err != nil {
			return errorf(http.StatusBadRequest, "Problems parsing JSON")
		}
	}
	if p.state != "open" || p.draft {
		return errorf(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	}
	head := r.pullHead(p)
	if in.SHA != "" && in.SHA != head {
		return errorf(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
	}
	base := r.branches[p.base]
	mb := r.mergeBase(base, head)
	var mbFiles map[string]string
	if mb != "" {
		mbFiles = r.commits[mb].files
	}
	tree := maps.Clone(r.commits[base].files)
	for _, ch := range diffTrees(mbFiles, r.commits[head].files) {
		cur, curOK := tree[ch.path]
		orig, origOK := mbFiles[ch.path]
		want, wantOK := r.commits[head].files[ch.path]
		if (cur != orig || curOK != origOK) && (cur != want || curOK != wantOK) {
			return errorf(http.StatusMethodNotAllowed, "Pull Request is not mergeable: conflict in %s", ch.path)
		}
		if wantOK {
			tree[ch.path] = want
		} else {
			delete(tree, ch.path)
		}
	}
	title := in.CommitTitle
	if title == "" {
		title = "Merge pull request #" + strconv.Itoa(p.number) + " from " + r.owner + "/" + p.head
	}
	parents := []string{base, head}
	if in.MergeMethod == "squash" || in.MergeMethod == "rebase" {
		parents = []string{base}
	}
	cm := r.newCommit(parents, tree, strings.TrimSpace(title+"\n\n"+in.CommitMessage))
	r.branches[p.base] = cm.sha
	now := time.Now()
	p.state, p.merged, p.mergeSHA, p.headSHA, p.mergedAt, p.closedAt, p.updated = "closed", true, cm.sha, head, now, now, now
	p.mergeMethod = in.MergeMethod
	if p.mergeMethod == "" {
		p.mergeMethod = "merge"
	}
	// merged_by is the user whose token merged it; the App's bot for its installation token (and the
	// server's static token).
	p.mergedBy, _ = c.w.logins.Login(c.token)
	if p.mergedBy == "" {
		p.mergedBy = "stagehand[bot]"
	}
	return ok(http.StatusOK, map[string]any{"sha": cm.sha, "merged": true, "message": "Pull Request successfully merged"})
}

// RecordMerge marks pull request number as merged by login mergedBy into its base as commit mergeSHA, a
// commit already on the base branch (made elsewhere, e.g. on internal/gitserver, and mirrored with
// MirrorCommit): a squash or rebase merge, whose merge commit is what the base branch got.
func (s Repo) RecordMerge(number int, mergeSHA, mergedBy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	if r.commits[mergeSHA] == nil {
		s.tb.Fatalf("githubtest: no commit %s in %s/%s", mergeSHA, s.owner, s.name)
	}
	for _, p := range r.pulls {
		if p.number == number {
			now := time.Now()
			p.state, p.merged, p.mergeSHA, p.headSHA, p.mergedAt, p.closedAt, p.updated = "closed", true, mergeSHA, mergeSHA, now, now, now
			p.mergeMethod, p.mergedBy = "squash", mergedBy
			return
		}
	}
	s.tb.Fatalf("githubtest: no pull request #%d in %s/%s", number, s.owner, s.name)
}

// listCommitPulls is GitHub's "list pull requests associated with a commit": the pull requests whose
// merge commit is the commit or that have it among their own commits (those of its head not on its base
// when it was merged, or now while it is open), newest first.
func (s pullsAPI) listCommitPulls(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	cm := r.commits[c.params["commit_sha"]]
	if cm == nil {
		return errorf(http.StatusUnprocessableEntity, "No commit found for SHA: %s", c.params["commit_sha"])
	}
	var out []any
	for _, p := range r.pulls {
		base := r.branches[p.base]
		if p.merged && len(r.commits[p.mergeSHA].parents) > 0 {
			base = r.commits[p.mergeSHA].parents[0]
		}
		if p.mergeSHA == cm.sha || slices.Contains(r.only(r.pullHead(p), base), cm.sha) {
			out = append(out, s.pullJSON(r, p))
		}
	}
	slices.Reverse(out)
	return paged(c, out, list)
}

func (s pullsAPI) isMerged(c *call) response {
	_, p, e := s.findPull(c)
	if e != nil {
		return *e
	}
	if !p.merged {
		return errorf(http.StatusNotFound, "Not Found")
	}
	return response{status: http.StatusNoContent}
}

func (s pullsAPI) pullFiles(c *call) response {
	r, p, e := s.findPull(c)
	if e != nil {
		return *e
	}
	head := r.pullHead(p)
	base := r.branches[p.base]
	if p.merged {
		base = r.commits[p.mergeSHA].parents[0]
	}
	var mbFiles map[string]string
	if mb := r.mergeBase(base, head); mb != "" {
		mbFiles = r.commits[mb].files
	}
	return paged(c, s.diffEntries(r, head, diffTrees(mbFiles, r.commits[head].files)), list)
}

// pullsAPI emulates pull requests: list, create, update, merge, files, and those of a commit.
type pullsAPI struct{ *world }
