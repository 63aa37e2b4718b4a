package githubtest

import (
	"encoding/base64"
	"hash/fnv"
	"net/http"
	"path"
	"time"
)

// routes lists every operation the server implements, keyed "METHOD /openapi/path".
func (s *Server) routes() map[string]handler {
	return map[string]handler{
		"GET /repos/{owner}/{repo}":                                     s.getRepo,
		"GET /repos/{owner}/{repo}/branches/{branch}":                   s.getBranch,
		"GET /repos/{owner}/{repo}/commits/{ref}":                       s.getCommit,
		"GET /repos/{owner}/{repo}/git/ref/{ref}":                       s.getRef,
		"POST /repos/{owner}/{repo}/git/refs":                           s.createRef,
		"PATCH /repos/{owner}/{repo}/git/refs/{ref}":                    s.updateRef,
		"DELETE /repos/{owner}/{repo}/git/refs/{ref}":                   s.deleteRef,
		"GET /repos/{owner}/{repo}/contents/{path}":                     s.getContents,
		"PUT /repos/{owner}/{repo}/contents/{path}":                     s.putContents,
		"DELETE /repos/{owner}/{repo}/contents/{path}":                  s.deleteContents,
		"POST /repos/{owner}/{repo}/check-runs":                         s.createCheckRun,
		"GET /repos/{owner}/{repo}/check-runs/{check_run_id}":           s.getCheckRun,
		"PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}":         s.updateCheckRun,
		"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":            s.listCheckRuns,
		"POST /repos/{owner}/{repo}/statuses/{sha}":                     s.createStatus,
		"GET /repos/{owner}/{repo}/commits/{ref}/status":                s.combinedStatus,
		"GET /repos/{owner}/{repo}/commits/{ref}/statuses":              s.listStatuses,
		"GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls":          s.listCommitPulls,
		"GET /repos/{owner}/{repo}/pulls":                               s.listPulls,
		"POST /repos/{owner}/{repo}/pulls":                              s.createPull,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}":                 s.getPull,
		"PATCH /repos/{owner}/{repo}/pulls/{pull_number}":               s.updatePull,
		"PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge":           s.mergePull,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}/merge":           s.isMerged,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}/files":           s.pullFiles,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/comments":      s.listComments,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments":     s.createComment,
		"GET /repos/{owner}/{repo}/issues/comments/{comment_id}":        s.getComment,
		"PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}":      s.updateComment,
		"DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}":     s.deleteComment,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/labels":        s.listLabels,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels":       s.addLabels,
		"PUT /repos/{owner}/{repo}/issues/{issue_number}/labels":        s.setLabels,
		"DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels":     s.clearLabels,
		"GET /repos/{owner}/{repo}/collaborators/{username}/permission": s.getPermission,
		"GET /orgs/{org}/teams/{team_slug}/memberships/{username}":      s.getMembership,
		"PUT /orgs/{org}/teams/{team_slug}/memberships/{username}":      s.putMembership,
		"DELETE /orgs/{org}/teams/{team_slug}/memberships/{username}":   s.deleteMembership,
		"GET /repos/{owner}/{repo}/installation":                        s.getInstallation,
		"GET /repos/{owner}/{repo}/compare/{basehead}":                  s.compare,
		"GET /user": s.getAuthenticatedUser,
	}
}

// repoOf looks the call's repository up; the response is set when it does not exist.
func (c *call) repo() (*repo, *response) {
	r := c.s.repos[c.params["owner"]+"/"+c.params["repo"]]
	if r == nil {
		res := errorf(http.StatusNotFound, "Not Found")
		return nil, &res
	}
	return r, nil
}

func userID(login string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(login))
	return int64(h.Sum32()%1_000_000 + 1)
}

func (s *Server) user(login string) map[string]any {
	return map[string]any{
		"login": login, "id": userID(login), "node_id": "U_" + login, "type": "User", "site_admin": false,
		"url": s.apiURL("/users/%s", login), "html_url": s.htmlURL("/%s", login),
		"avatar_url": s.htmlURL("/avatars/%s", login),
	}
}

func (s *Server) repoJSON(r *repo) map[string]any {
	full := r.owner + "/" + r.name
	return map[string]any{
		"id": r.id, "node_id": "R_" + full, "name": r.name, "full_name": full, "owner": s.user(r.owner),
		"private": false, "default_branch": r.defaultBranch, "visibility": "public",
		"url": s.apiURL("/repos/%s", full), "html_url": s.htmlURL("/%s", full),
		"clone_url": s.htmlURL("/%s.git", full), "git_url": s.htmlURL("/%s.git", full),
		"ssh_url": "git@github.invalid:" + full + ".git", "svn_url": s.htmlURL("/%s", full),
		"created_at": ts(time.Unix(0, 0)), "updated_at": ts(time.Now()), "pushed_at": ts(time.Now()),
	}
}

func (s *Server) commitJSON(r *repo, c *commit) map[string]any {
	full := r.owner + "/" + r.name
	parents := []any{}
	for _, p := range c.parents {
		parents = append(parents, map[string]any{"sha": p, "url": s.apiURL("/repos/%s/commits/%s", full, p), "html_url": s.htmlURL("/%s/commit/%s", full, p)})
	}
	people := [2]Person{{Name: "Stagehand Test", Email: "test@github.invalid"}, {Name: "Stagehand Test", Email: "test@github.invalid"}}
	switch {
	case c.people != nil:
		people = *c.people
	case c.author != "":
		p := Person{Login: c.author, Name: c.author, Email: c.author + "@users.noreply.github.com"}
		people = [2]Person{p, p}
	}
	var gitPeople [2]map[string]any
	var users [2]any
	for i, p := range people {
		gitPeople[i] = map[string]any{"name": p.Name, "email": p.Email, "date": ts(c.time)}
		if p.Login != "" {
			users[i] = s.user(p.Login)
		}
	}
	return map[string]any{
		"sha": c.sha, "node_id": "C_" + c.sha, "url": s.apiURL("/repos/%s/commits/%s", full, c.sha),
		"html_url": s.htmlURL("/%s/commit/%s", full, c.sha), "comments_url": s.apiURL("/repos/%s/commits/%s/comments", full, c.sha),
		"commit": map[string]any{
			"url": s.apiURL("/repos/%s/git/commits/%s", full, c.sha), "message": c.message, "author": gitPeople[0], "committer": gitPeople[1],
			"tree": map[string]any{"sha": c.sha, "url": s.apiURL("/repos/%s/git/trees/%s", full, c.sha)}, "comment_count": 0,
		},
		"author": users[0], "committer": users[1], "parents": parents,
	}
}

// gitCommitJSON is the git-data shape of a commit, as the contents API returns it.
func (s *Server) gitCommitJSON(r *repo, c *commit) map[string]any {
	full := r.owner + "/" + r.name
	parents := []any{}
	for _, p := range c.parents {
		parents = append(parents, map[string]any{"sha": p, "url": s.apiURL("/repos/%s/git/commits/%s", full, p), "html_url": s.htmlURL("/%s/commit/%s", full, p)})
	}
	person := map[string]any{"name": "Stagehand Test", "email": "test@github.invalid", "date": ts(c.time)}
	return map[string]any{
		"sha": c.sha, "node_id": "C_" + c.sha, "url": s.apiURL("/repos/%s/git/commits/%s", full, c.sha),
		"html_url": s.htmlURL("/%s/commit/%s", full, c.sha), "message": c.message, "author": person, "committer": person,
		"tree": map[string]any{"sha": c.sha, "url": s.apiURL("/repos/%s/git/trees/%s", full, c.sha)}, "parents": parents,
		"verification": map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
	}
}

func (s *Server) fileJSON(r *repo, ref, p, content string, withContent bool) map[string]any {
	full := r.owner + "/" + r.name
	sha := blobSHA(content)
	self := s.apiURL("/repos/%s/contents/%s?ref=%s", full, p, ref)
	html := s.htmlURL("/%s/blob/%s/%s", full, ref, p)
	git := s.apiURL("/repos/%s/git/blobs/%s", full, sha)
	m := map[string]any{
		"type": "file", "name": path.Base(p), "path": p, "sha": sha, "size": len(content),
		"url": self, "html_url": html, "git_url": git, "download_url": s.htmlURL("/raw/%s/%s/%s", full, ref, p),
		"_links": map[string]any{"self": self, "html": html, "git": git},
	}
	if withContent {
		m["encoding"] = "base64"
		m["content"] = base64.StdEncoding.EncodeToString([]byte(content))
	}
	return m
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }
