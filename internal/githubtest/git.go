package githubtest

import (
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strings"
)

func (s gitAPI) getRepo(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	return ok(http.StatusOK, s.repoJSON(r))
}

func (s gitAPI) getBranch(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	b := c.params["branch"]
	sha, found := r.branches[b]
	if !found {
		return errorf(http.StatusNotFound, "Branch not found")
	}
	full := r.owner + "/" + r.name
	return ok(http.StatusOK, map[string]any{
		"name": b, "commit": s.commitJSON(r, r.commits[sha]), "protected": false,
		"_links":         map[string]any{"self": s.apiURL("/repos/%s/branches/%s", full, b), "html": s.htmlURL("/%s/tree/%s", full, b)},
		"protection_url": s.apiURL("/repos/%s/branches/%s/protection", full, b),
	})
}

func (s gitAPI) getCommit(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	cm := r.resolve(c.params["ref"])
	if cm == nil {
		return errorf(http.StatusNotFound, "No commit found for SHA: %s", c.params["ref"])
	}
	j := s.commitJSON(r, cm)
	var before map[string]string
	if len(cm.parents) > 0 {
		before = r.commits[cm.parents[0]].files
	}
	j["files"] = s.diffEntries(r, cm.sha, diffTrees(before, cm.files))
	return ok(http.StatusOK, j)
}

func (s gitAPI) compare(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	base, head, found := strings.Cut(c.params["basehead"], "...")
	if !found {
		return errorf(http.StatusNotFound, "Not Found")
	}
	bc, hc := r.resolve(base), r.resolve(head)
	if bc == nil || hc == nil {
		return errorf(http.StatusNotFound, "Not Found")
	}
	mb := r.commits[r.mergeBase(bc.sha, hc.sha)]
	var mbFiles map[string]string
	if mb != nil {
		mbFiles = mb.files
	}
	status := "diverged"
	switch {
	case bc.sha == hc.sha:
		status = "identical"
	case r.isAncestor(bc.sha, hc.sha):
		status = "ahead"
	case r.isAncestor(hc.sha, bc.sha):
		status = "behind"
	}
	ahead, behind := r.only(hc.sha, bc.sha), r.only(bc.sha, hc.sha)
	commits := []any{}
	for i := len(ahead) - 1; i >= 0; i-- { // oldest first, as GitHub lists them
		commits = append(commits, s.commitJSON(r, r.commits[ahead[i]]))
	}
	full := r.owner + "/" + r.name
	return ok(http.StatusOK, map[string]any{
		"url": s.apiURL("/repos/%s/compare/%s", full, c.params["basehead"]), "html_url": s.htmlURL("/%s/compare/%s", full, c.params["basehead"]),
		"status": status, "ahead_by": len(ahead), "behind_by": len(behind), "total_commits": len(ahead),
		"base_commit": s.commitJSON(r, bc), "merge_base_commit": s.commitJSON(r, coalesce(mb, bc)),
		"files": s.diffEntries(r, hc.sha, diffTrees(mbFiles, hc.files)), "commits": commits,
	})
}

func coalesce(a, b *commit) *commit {
	if a != nil {
		return a
	}
	return b
}

func (s *world) diffEntries(r *repo, ref string, changes []fileChange) []any {
	full := r.owner + "/" + r.name
	out := []any{}
	for _, ch := range changes {
		st := "modified"
		switch {
		case ch.before == "" && ch.after != "":
			st = "added"
		case ch.after == "" && ch.before != "":
			st = "removed"
		}
		add, del := strings.Count(ch.after, "\n"), strings.Count(ch.before, "\n")
		out = append(out, map[string]any{
			"sha": blobSHA(ch.after), "filename": ch.path, "status": st, "additions": add, "deletions": del, "changes": add + del,
			"blob_url": s.htmlURL("/%s/blob/%s/%s", full, ref, ch.path), "raw_url": s.htmlURL("/%s/raw/%s/%s", full, ref, ch.path),
			"contents_url": s.apiURL("/repos/%s/contents/%s?ref=%s", full, ch.path, ref),
		})
	}
	return out
}

func (s gitAPI) refJSON(r *repo, branch string) map[string]any {
	full := r.owner + "/" + r.name
	sha := r.branches[branch]
	return map[string]any{
		"ref": "refs/heads/" + branch, "node_id": "REF_" + branch, "url": s.apiURL("/repos/%s/git/refs/heads/%s", full, branch),
		"object": map[string]any{"type": "commit", "sha": sha, "url": s.apiURL("/repos/%s/git/commits/%s", full, sha)},
	}
}

// branchOfRef accepts "heads/<b>" (the form the refs API takes) and returns b.
func branchOfRef(ref string) (string, bool) {
	b, found := strings.CutPrefix(strings.TrimPrefix(ref, "refs/"), "heads/")
	return b, found && b != ""
}

func (s gitAPI) getRef(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	b, valid := branchOfRef(c.params["ref"])
	if _, found := r.branches[b]; !valid || !found {
		return errorf(http.StatusNotFound, "Not Found")
	}
	return ok(http.StatusOK, s.refJSON(r, b))
}

func (s gitAPI) createRef(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct{ Ref, SHA string }
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	if !strings.HasPrefix(in.Ref, "refs/") || strings.Count(in.Ref, "/") < 2 {
		return errorf(http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes")
	}
	b, valid := branchOfRef(in.Ref)
	if !valid {
		return errorf(http.StatusUnprocessableEntity, "githubtest models branches only, not %s", in.Ref)
	}
	if r.commits[in.SHA] == nil {
		return errorf(http.StatusUnprocessableEntity, "Object does not exist")
	}
	if _, found := r.branches[b]; found {
		return errorf(http.StatusUnprocessableEntity, "Reference already exists")
	}
	r.branches[b] = in.SHA
	return ok(http.StatusCreated, s.refJSON(r, b))
}

func (s gitAPI) updateRef(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in struct {
		SHA   string
		Force bool
	}
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	b, valid := branchOfRef(c.params["ref"])
	old, found := r.branches[b]
	if !valid || !found {
		return errorf(http.StatusUnprocessableEntity, "Reference does not exist")
	}
	if r.commits[in.SHA] == nil {
		return errorf(http.StatusUnprocessableEntity, "Object does not exist")
	}
	if !in.Force && !r.isAncestor(old, in.SHA) {
		return errorf(http.StatusUnprocessableEntity, "Update is not a fast forward")
	}
	r.branches[b] = in.SHA
	return ok(http.StatusOK, s.refJSON(r, b))
}

func (s gitAPI) deleteRef(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	b, valid := branchOfRef(c.params["ref"])
	if _, found := r.branches[b]; !valid || !found {
		return errorf(http.StatusUnprocessableEntity, "Reference does not exist")
	}
	delete(r.branches, b)
	return response{status: http.StatusNoContent}
}

func (s gitAPI) getContents(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	ref := c.query.Get("ref")
	if ref == "" {
		ref = r.defaultBranch
	}
	cm := r.resolve(ref)
	if cm == nil {
		return errorf(http.StatusNotFound, "No commit found for the ref %s", ref)
	}
	p := strings.Trim(c.params["path"], "/")
	if content, found := cm.files[p]; found {
		return ok(http.StatusOK, s.fileJSON(r, file{ref, p, content}, true))
	}
	// A directory: list its direct children.
	entries := map[string]map[string]any{}
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	for fp, content := range cm.files {
		rest, found := strings.CutPrefix(fp, prefix)
		if !found {
			continue
		}
		if dir, _, isDir := strings.Cut(rest, "/"); isDir {
			full := r.owner + "/" + r.name
			dp := prefix + dir
			entries[dir] = map[string]any{
				"type": "dir", "name": dir, "path": dp, "sha": blobSHA("tree:" + dp), "size": 0,
				"url": s.apiURL("/repos/%s/contents/%s?ref=%s", full, dp, ref), "html_url": s.htmlURL("/%s/tree/%s/%s", full, ref, dp),
				"git_url": nil, "download_url": nil, "_links": map[string]any{"self": s.apiURL("/repos/%s/contents/%s", full, dp)},
			}
			continue
		}
		entries[rest] = s.fileJSON(r, file{ref, fp, content}, false)
	}
	if len(entries) == 0 {
		return errorf(http.StatusNotFound, "Not Found")
	}
	names := slices.Sorted(maps.Keys(entries))
	out := make([]any, 0, len(names))
	for _, n := range names {
		out = append(out, entries[n])
	}
	return ok(http.StatusOK, out)
}

type contentsInput struct {
	Message string `json:"message"`
	Content string `json:"content"`
	SHA     string `json:"sha"`
	Branch  string `json:"branch"`
}

func (s gitAPI) putContents(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in contentsInput
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	data, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		return errorf(http.StatusUnprocessableEntity, "content is not valid Base64")
	}
	if in.Branch == "" {
		in.Branch = r.defaultBranch
	}
	head, found := r.branches[in.Branch]
	if !found {
		return errorf(http.StatusUnprocessableEntity, "Branch %s not found", in.Branch)
	}
	p := strings.Trim(c.params["path"], "/")
	files := r.commits[head].files
	old, exists := files[p]
	switch {
	case exists && in.SHA == "":
		return errorf(http.StatusUnprocessableEntity, "Invalid request.\n\n\"sha\" wasn't supplied.")
	case exists && in.SHA != blobSHA(old):
		return errorf(http.StatusConflict, "%s does not match %s", p, in.SHA)
	case !exists && in.SHA != "":
		return errorf(http.StatusConflict, "%s does not match %s", p, in.SHA)
	}
	tree := maps.Clone(files)
	tree[p] = string(data)
	cm := r.newCommit([]string{head}, tree, in.Message)
	r.branches[in.Branch] = cm.sha
	status := http.StatusOK
	if !exists {
		status = http.StatusCreated
	}
	return ok(status, map[string]any{"content": s.fileJSON(r, file{in.Branch, p, string(data)}, false), "commit": s.gitCommitJSON(r, cm)})
}

func (s gitAPI) deleteContents(c *call) response {
	r, e := c.repo()
	if e != nil {
		return *e
	}
	var in contentsInput
	if err := c.decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "Problems parsing JSON")
	}
	if in.Branch == "" {
		in.Branch = r.defaultBranch
	}
	head, found := r.branches[in.Branch]
	if !found {
		return errorf(http.StatusUnprocessableEntity, "Branch %s not found", in.Branch)
	}
	p := strings.Trim(c.params["path"], "/")
	old, exists := r.commits[head].files[p]
	if !exists {
		return errorf(http.StatusNotFound, "Not Found")
	}
	if in.SHA != blobSHA(old) {
		return errorf(http.StatusConflict, "%s does not match %s", p, in.SHA)
	}
	tree := maps.Clone(r.commits[head].files)
	delete(tree, p)
	cm := r.newCommit([]string{head}, tree, in.Message)
	r.branches[in.Branch] = cm.sha
	return ok(http.StatusOK, map[string]any{"content": nil, "commit": s.gitCommitJSON(r, cm)})
}

// gitAPI emulates the repository, branch, commit, compare, git refs and contents operations.
type gitAPI struct{ *world }
