package githubtest

import (
	"encoding/base64"
	"hash/fnv"
	"path"
	"time"
)

func userID(login string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(login))
	return int64(h.Sum32()%1_000_000 + 1)
}

func (s *world) user(login string) map[string]any {
	return map[string]any{
		"login": login, "id": userID(login), "node_id": "U_" + login, "type": "User", "site_admin": false,
		"url": s.apiURL("/users/%s", login), "html_url": s.htmlURL("/%s", login),
		"avatar_url": s.htmlURL("/avatars/%s", login),
	}
}

func (s *world) repoJSON(r *repo) map[string]any {
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

func (s *world) commitJSON(r *repo, c *commit) map[string]any {
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
func (s *world) gitCommitJSON(r *repo, c *commit) map[string]any {
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

// file is one file of a repository at a ref, as the contents API describes it.
type file struct {
	ref, path, content string
}

// fileJSON describes f; with its content (base64) when withContent.
func (s *world) fileJSON(r *repo, f file, withContent bool) map[string]any {
	ref, p, content := f.ref, f.path, f.content
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
