package gitserver

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Deleted as a file's content in a Commit removes that path.
const Deleted = "\x00gitserver:deleted\x00"

const symlinkPrefix = "\x00gitserver:symlink\x00"

// Symlink as a file's content in a Commit makes that path a symbolic link to target.
func Symlink(target string) string { return symlinkPrefix + target }

// Person is a commit's author or committer: a name and an e-mail address.
type Person struct{ Name, Email string }

// The author and committer of a Commit that names none.
const (
	testName  = "Stagehand Test"
	testEmail = "test@stagehand.invalid"
)

// Commit is one commit to write on a branch.
type Commit struct {
	Branch string
	// Files maps a path to its content; Deleted removes the path, Symlink links it.
	Files   map[string]string
	Message string
	// Author wrote the commit; zero means "Stagehand Test <test@stagehand.invalid>".
	Author Person
	// Committer committed it (a rebase, a cherry-pick, a push of someone else's work); zero means the author.
	Committer Person
}

// identity is the environment that makes git record c's author and committer.
func (c Commit) identity() []string {
	author, committer := c.Author, c.Committer
	if author == (Person{}) {
		author = Person{Name: testName, Email: testEmail}
	}
	if committer == (Person{}) {
		committer = author
	}
	return []string{"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email,
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email}
}

// Repo writes commits into one bare repository of a Server, as pushes would. Get it with Server.Repo.
type Repo struct {
	git command // runs in the bare repository
}

// Repo returns the writer of the named bare repository (create it first with Init).
func (s *Server) Repo(name string) *Repo { return &Repo{git: s.git(s.Path(name))} }

// Commit writes files (path → content; Deleted removes, Symlink links) on top of branch's head (or as its
// first commit) and moves the branch to the new commit, as a push would. It returns the commit's SHA.
func (r *Repo) Commit(t testing.TB, branch string, files map[string]string, msg string) string {
	t.Helper()
	return r.write(t, Commit{Branch: branch, Files: files, Message: msg}, true)
}

// Push is Commit with every field of c: an author and a committer other than the server's
// "Stagehand Test <test@stagehand.invalid>".
func (r *Repo) Push(t testing.TB, c Commit) string {
	t.Helper()
	return r.write(t, c, true)
}

// ForcePush replaces c.Branch with a new root commit whose tree is exactly c.Files (rewritten history: the
// old head is no longer an ancestor) and returns its SHA.
func (r *Repo) ForcePush(t testing.TB, c Commit) string {
	t.Helper()
	return r.write(t, c, false)
}

// CommitDir copies the directory tree at dir into the repository under prefix ("" or "." for the root),
// replacing whatever was under prefix before, writes c.Files on top, commits on c.Branch and returns the
// commit's SHA. Symbolic links are kept as links.
func (r *Repo) CommitDir(t testing.TB, c Commit, dir, prefix string) string {
	t.Helper()
	prefix = strings.Trim(path.Clean("/"+filepath.ToSlash(prefix)), "/")
	files := map[string]string{}
	if parent := r.head(c.Branch); parent != "" {
		args := []string{"ls-tree", "-r", "--name-only", "-z", parent}
		if prefix != "" {
			args = append(args, "--", prefix)
		}
		for _, p := range strings.Split(r.git.run(t, args...), "\x00") {
			if p != "" {
				files[p] = Deleted
			}
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := path.Join(prefix, filepath.ToSlash(rel))
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files[name] = Symlink(filepath.ToSlash(target))
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[name] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("gitserver: copying %s: %v", dir, err)
	}
	maps.Copy(files, c.Files)
	c.Files = files
	return r.write(t, c, true)
}

// Reset forces branch to point at sha (any commit in the repository), as a
// force-push of an older or rewritten history would.
func (s *Server) Reset(t testing.TB, repo, branch, sha string) {
	t.Helper()
	s.git(s.Path(repo)).run(t, "update-ref", "refs/heads/"+branch, sha)
}

// Head returns the SHA branch points at, or "" when the branch does not exist.
func (s *Server) Head(t testing.TB, repo, branch string) string {
	t.Helper()
	return s.Repo(repo).head(branch)
}

func (r *Repo) head(branch string) string {
	out, err := r.git.output("rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

// write commits c, on top of its branch's head when onTop, else as a new root commit.
func (r *Repo) write(t testing.TB, c Commit, onTop bool) string {
	t.Helper()
	idx, err := os.CreateTemp("", "gitserver-index-*")
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	idx.Close()
	os.Remove(idx.Name()) // git wants to create it itself
	defer os.Remove(idx.Name())
	indexed := r.git.with("GIT_INDEX_FILE=" + idx.Name())

	old := r.head(c.Branch)
	parent := ""
	if onTop {
		parent = old
	}
	if parent != "" {
		indexed.run(t, "read-tree", parent)
	} else {
		indexed.run(t, "read-tree", "--empty")
	}

	paths := slices.Sorted(maps.Keys(c.Files))
	contents := make([]string, 0, len(paths))
	for _, p := range paths {
		if content := c.Files[p]; content != Deleted {
			contents = append(contents, strings.TrimPrefix(content, symlinkPrefix))
		}
	}
	blobs := r.writeBlobs(t, contents)
	var info strings.Builder
	for _, p := range paths {
		content := c.Files[p]
		clean := strings.TrimPrefix(path.Clean("/"+p), "/")
		switch {
		case content == Deleted:
			fmt.Fprintf(&info, "0 %s\t%s\n", strings.Repeat("0", 40), clean)
		case strings.HasPrefix(content, symlinkPrefix):
			fmt.Fprintf(&info, "120000 %s\t%s\n", blobs[0], clean)
			blobs = blobs[1:]
		default:
			fmt.Fprintf(&info, "100644 %s\t%s\n", blobs[0], clean)
			blobs = blobs[1:]
		}
	}
	if info.Len() > 0 {
		update := indexed
		update.stdin = info.String()
		update.run(t, "update-index", "--index-info")
	}
	tree := indexed.run(t, "write-tree")
	args := []string{"commit-tree", tree, "-m", c.Message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha := r.git.with(c.identity()...).run(t, args...)
	if onTop && old != "" {
		r.git.run(t, "update-ref", "refs/heads/"+c.Branch, sha, old)
	} else {
		r.git.run(t, "update-ref", "refs/heads/"+c.Branch, sha)
	}
	return sha
}

// writeBlobs stores each content as a blob with one git process and returns
// their SHAs in order.
func (r *Repo) writeBlobs(t testing.TB, contents []string) []string {
	t.Helper()
	if len(contents) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "gitserver-blobs-*")
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	defer os.RemoveAll(tmp)
	var list strings.Builder
	for i, c := range contents {
		name := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			t.Fatalf("gitserver: %v", err)
		}
		list.WriteString(name + "\n")
	}
	hash := r.git
	hash.stdin = list.String()
	shas := strings.Fields(hash.run(t, "hash-object", "-w", "--no-filters", "--stdin-paths"))
	if len(shas) != len(contents) {
		t.Fatalf("gitserver: hash-object returned %d objects for %d files", len(shas), len(contents))
	}
	return shas
}
