package githubtest

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
)

// Repo is one repository of the server, for a test to seed and inspect: commits and files, collaborators,
// and (in checks.go, pulls.go, misc.go, deployments.go) its check runs, statuses, pull requests, comments and
// deployments. Get it with Server.Repo.
type Repo struct {
	*world
	owner, name string
}

// repo is an in-memory repository: branches point at commits, a commit holds the whole file tree.
type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	branches      map[string]string // branch → commit sha
	commits       map[string]*commit
	collaborators map[string]string // login → role (read, triage, write, maintain, admin)
	// public lets anyone read the repository without credentials (SetPublic).
	public      bool
	pulls       []*pull
	checkRuns   []*CheckRun
	statuses    map[string][]*Status // commit sha → statuses, oldest first
	comments    []*Comment
	labels      map[int][]string
	deployments []*Deployment // oldest first (deployments.go)
	seq         int           // commit counter, makes shas unique
}

type commit struct {
	sha     string
	parents []string
	files   map[string]string
	message string
	time    time.Time
	// author is the GitHub login of the commit's author and committer (SetCommitAuthor); "" for none.
	author string
	// people, when set (SetCommitPeople), are the commit's author and committer, each on its own.
	people *[2]Person
}

// Person is one side of a commit, its author or its committer, as GitHub shows it: Name and Email are the
// commit's own, Login the GitHub account GitHub ties the e-mail to ("" for none: the commit's "author" or
// "committer" is then null, as GitHub answers for an e-mail no account has verified).
type Person struct{ Login, Name, Email string }

// CreateRepo creates owner/name with one empty initial commit on defaultBranch (GitHub's "Initialize this
// repository"). The owner login gets admin permission.
func (s *Server) CreateRepo(owner, name, defaultBranch string) {
	s.world.mu.Lock()
	defer s.world.mu.Unlock()
	key := owner + "/" + name
	if _, ok := s.world.repos[key]; ok {
		s.world.tb.Fatalf("githubtest: repository %s exists", key)
	}
	r := &repo{
		id: s.world.id(), owner: owner, name: name, defaultBranch: defaultBranch,
		branches: map[string]string{}, commits: map[string]*commit{},
		collaborators: map[string]string{owner: "admin"}, statuses: map[string][]*Status{}, labels: map[int][]string{},
	}
	c := r.newCommit(nil, map[string]string{}, "Initial commit")
	r.branches[defaultBranch] = c.sha
	s.world.repos[key] = r
}

// Commit writes files (path → content) on top of branch, creating the branch from the default branch when
// it does not exist, and returns the new commit's sha.
func (s Repo) Commit(branch string, files map[string]string, message string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	head, ok := r.branches[branch]
	if !ok {
		head = r.branches[r.defaultBranch]
	}
	tree := maps.Clone(r.commits[head].files)
	maps.Copy(tree, files)
	c := r.newCommit([]string{head}, tree, message)
	r.branches[branch] = c.sha
	return c.sha
}

// MirrorCommit records a commit made elsewhere (e.g. on internal/gitserver's real git repository) under its
// own sha on top of branch, so check runs and statuses can be created for it. files are merged into the
// branch's tree as Commit does.
func (s Repo) MirrorCommit(branch, sha string, files map[string]string, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	head, ok := r.branches[branch]
	if !ok {
		head = r.branches[r.defaultBranch]
	}
	tree := maps.Clone(r.commits[head].files)
	maps.Copy(tree, files)
	r.commits[sha] = &commit{sha: sha, parents: []string{head}, files: tree, message: message, time: time.Now().UTC()}
	r.branches[branch] = sha
}

// SetCommitAuthor makes login (a GitHub user, e-mail <login>@users.noreply.github.com) the author and
// committer of commit sha, as the commits API and the compare API show them.
func (s Repo) SetCommitAuthor(sha, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustRepo(s.owner, s.name).commits[sha]
	if c == nil {
		panic(fmt.Sprintf("githubtest: no commit %s in %s/%s", sha, s.owner, s.name))
	}
	c.author = login
}

// SetCommitPeople makes author and committer the author and committer of commit sha, each on its own
// (a commit one person wrote and another committed, or whose e-mail GitHub ties to no account), as the
// commits API and the compare API show them. It replaces SetCommitAuthor's login.
func (s Repo) SetCommitPeople(sha string, author, committer Person) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustRepo(s.owner, s.name).commits[sha]
	if c == nil {
		panic(fmt.Sprintf("githubtest: no commit %s in %s/%s", sha, s.owner, s.name))
	}
	c.author, c.people = "", &[2]Person{author, committer}
}

// Branch returns the commit sha branch points at, or "" when it does not exist.
func (s Repo) Branch(branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustRepo(s.owner, s.name).branches[branch]
}

// File returns a file's content at ref (branch name or commit sha).
func (s Repo) File(ref, path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustRepo(s.owner, s.name).resolve(ref)
	if c == nil {
		return "", false
	}
	v, ok := c.files[path]
	return v, ok
}

// Files returns every file at ref (branch name or commit sha).
func (s Repo) Files(ref string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustRepo(s.owner, s.name).resolve(ref)
	if c == nil {
		return nil
	}
	return maps.Clone(c.files)
}

// CommitMessage returns the message of the commit at ref.
func (s Repo) CommitMessage(ref string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.mustRepo(s.owner, s.name).resolve(ref); c != nil {
		return c.message
	}
	return ""
}

// SetPermission gives login a role on the repository: read, triage, write, maintain or admin ("" removes it).
func (s Repo) SetPermission(login, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	switch role {
	case "":
		delete(r.collaborators, login)
	case "read", "triage", "write", "maintain", "admin":
		r.collaborators[login] = role
	default:
		s.tb.Fatalf("githubtest: unknown role %q", role)
	}
}

// SetPublic lets requests without credentials read owner/name (GET), as GitHub shows a public repository
// to anyone; other repositories answer them 401, and writes still need a token.
func (s Repo) SetPublic() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustRepo(s.owner, s.name).public = true
}

// AddTeamMember makes login an active member of the team org/slug.
func (s *Server) AddTeamMember(org, slug, login string) {
	s.world.mu.Lock()
	defer s.world.mu.Unlock()
	t := s.world.teams[org+"/"+slug]
	if t == nil {
		t = map[string]string{}
		s.world.teams[org+"/"+slug] = t
	}
	t[login] = "member"
}

func (r *repo) newCommit(parents []string, files map[string]string, message string) *commit {
	r.seq++
	h := sha1.New()
	fmt.Fprintf(h, "%s/%s\x00%d\x00%s\x00%s\x00", r.owner, r.name, r.seq, strings.Join(parents, ","), message)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%s\x00", p, blobSHA(files[p]))
	}
	c := &commit{sha: fmt.Sprintf("%x", h.Sum(nil)), parents: parents, files: files, message: message, time: time.Now().UTC()}
	r.commits[c.sha] = c
	return c
}

// resolve finds the commit for a branch name, "heads/<b>", "refs/heads/<b>" or a full commit sha.
func (r *repo) resolve(ref string) *commit {
	b := strings.TrimPrefix(strings.TrimPrefix(ref, "refs/"), "heads/")
	if sha, ok := r.branches[b]; ok {
		return r.commits[sha]
	}
	return r.commits[ref]
}

// isAncestor reports whether a is b or one of b's ancestors.
func (r *repo) isAncestor(a, b string) bool {
	seen := map[string]bool{}
	queue := []string{b}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x == a {
			return true
		}
		if seen[x] || r.commits[x] == nil {
			continue
		}
		seen[x] = true
		queue = append(queue, r.commits[x].parents...)
	}
	return false
}

// only returns the commits reachable from a but not from b, newest first (breadth-first).
func (r *repo) only(a, b string) []string {
	fromB := map[string]bool{}
	queue := []string{b}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if fromB[x] || r.commits[x] == nil {
			continue
		}
		fromB[x] = true
		queue = append(queue, r.commits[x].parents...)
	}
	var out []string
	seen := map[string]bool{}
	queue = []string{a}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if seen[x] || fromB[x] || r.commits[x] == nil {
			continue
		}
		seen[x] = true
		out = append(out, x)
		queue = append(queue, r.commits[x].parents...)
	}
	return out
}

// mergeBase returns the nearest common ancestor of a and b ("" when there is none).
func (r *repo) mergeBase(a, b string) string {
	anc := map[string]bool{}
	queue := []string{b}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if anc[x] || r.commits[x] == nil {
			continue
		}
		anc[x] = true
		queue = append(queue, r.commits[x].parents...)
	}
	seen := map[string]bool{}
	queue = []string{a}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if anc[x] {
			return x
		}
		if seen[x] || r.commits[x] == nil {
			continue
		}
		seen[x] = true
		queue = append(queue, r.commits[x].parents...)
	}
	return ""
}

// fileChange is one path that differs between two trees ("" content: absent).
type fileChange struct{ path, before, after string }

func diffTrees(a, b map[string]string) []fileChange {
	var out []fileChange
	for p, v := range b {
		if a[p] != v || !has(a, p) {
			out = append(out, fileChange{p, a[p], v})
		}
	}
	for p, v := range a {
		if !has(b, p) {
			out = append(out, fileChange{p, v, ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// blobSHA is git's object id of a blob with this content.
func blobSHA(content string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00%s", len(content), content)
	return fmt.Sprintf("%x", h.Sum(nil))
}
