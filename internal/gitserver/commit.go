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

// Deleted as a file's content in Commit removes that path.
const Deleted = "\x00gitserver:deleted\x00"

const symlinkPrefix = "\x00gitserver:symlink\x00"

// Symlink as a file's content in Commit makes that path a symbolic link to target.
func Symlink(target string) string { return symlinkPrefix + target }

// Commit writes files (path → content; Deleted removes, Symlink links) on top
// of branch's head (or as its first commit) and moves the branch to the new
// commit, as a push would. It returns the commit's SHA.
func (s *Server) Commit(t testing.TB, repo, branch string, files map[string]string, msg string) string {
	t.Helper()
	return s.commit(t, repo, branch, files, msg, true, nil)
}

// CommitAs is Commit with the given author and committer (name and e-mail address) instead of the
// server's "Stagehand Test <test@stagehand.invalid>".
func (s *Server) CommitAs(t testing.TB, repo, branch, name, email string, files map[string]string, msg string) string {
	t.Helper()
	return s.commit(t, repo, branch, files, msg, true, []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email})
}

// CommitBy is CommitAs with another committer than the author: a commit one person wrote and another
// committed (a rebase, a cherry-pick, a push of someone else's work).
func (s *Server) CommitBy(t testing.TB, repo, branch, authorName, authorEmail, committerName, committerEmail string, files map[string]string, msg string) string {
	t.Helper()
	return s.commit(t, repo, branch, files, msg, true, []string{"GIT_AUTHOR_NAME=" + authorName, "GIT_AUTHOR_EMAIL=" + authorEmail,
		"GIT_COMMITTER_NAME=" + committerName, "GIT_COMMITTER_EMAIL=" + committerEmail})
}

// ForcePush replaces branch with a new root commit whose tree is exactly files
// (rewritten history: the old head is no longer an ancestor) and returns its SHA.
func (s *Server) ForcePush(t testing.TB, repo, branch string, files map[string]string, msg string) string {
	t.Helper()
	return s.commit(t, repo, branch, files, msg, false, nil)
}

// CommitDir copies the directory tree at dir into the repository under prefix
// ("" or "." for the root), replacing whatever was under prefix before,
// commits on branch and returns the commit's SHA. Symbolic links are kept as links.
func (s *Server) CommitDir(t testing.TB, repo, branch, dir, prefix, msg string) string {
	t.Helper()
	prefix = strings.Trim(path.Clean("/"+filepath.ToSlash(prefix)), "/")
	files := map[string]string{}
	if parent := s.head(repo, branch); parent != "" {
		args := []string{"ls-tree", "-r", "--name-only", "-z", parent}
		if prefix != "" {
			args = append(args, "--", prefix)
		}
		out := s.run(t, s.Path(repo), nil, "", args...)
		for _, p := range strings.Split(out, "\x00") {
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
	return s.commit(t, repo, branch, files, msg, true, nil)
}

// Reset forces branch to point at sha (any commit in the repository), as a
// force-push of an older or rewritten history would.
func (s *Server) Reset(t testing.TB, repo, branch, sha string) {
	t.Helper()
	s.run(t, s.Path(repo), nil, "", "update-ref", "refs/heads/"+branch, sha)
}

// Head returns the SHA branch points at, or "" when the branch does not exist.
func (s *Server) Head(t testing.TB, repo, branch string) string {
	t.Helper()
	return s.head(repo, branch)
}

func (s *Server) head(repo, branch string) string {
	out, err := s.exec(s.Path(repo), nil, "", "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

func (s *Server) commit(t testing.TB, repo, branch string, files map[string]string, msg string, onTop bool, who []string) string {
	t.Helper()
	dir := s.Path(repo)
	idx, err := os.CreateTemp("", "gitserver-index-*")
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	idx.Close()
	os.Remove(idx.Name()) // git wants to create it itself
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}

	old := s.head(repo, branch)
	parent := ""
	if onTop {
		parent = old
	}
	if parent != "" {
		s.run(t, dir, env, "", "read-tree", parent)
	} else {
		s.run(t, dir, env, "", "read-tree", "--empty")
	}

	paths := slices.Sorted(maps.Keys(files))
	contents := make([]string, 0, len(paths))
	for _, p := range paths {
		if c := files[p]; c != Deleted {
			contents = append(contents, strings.TrimPrefix(c, symlinkPrefix))
		}
	}
	blobs := s.writeBlobs(t, dir, contents)
	var info strings.Builder
	for _, p := range paths {
		content := files[p]
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
		s.run(t, dir, env, info.String(), "update-index", "--index-info")
	}
	tree := s.run(t, dir, env, "", "write-tree")
	args := []string{"commit-tree", tree, "-m", msg}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha := s.run(t, dir, who, "", args...)
	if onTop && old != "" {
		s.run(t, dir, nil, "", "update-ref", "refs/heads/"+branch, sha, old)
	} else {
		s.run(t, dir, nil, "", "update-ref", "refs/heads/"+branch, sha)
	}
	return sha
}

// writeBlobs stores each content as a blob with one git process and returns
// their SHAs in order.
func (s *Server) writeBlobs(t testing.TB, dir string, contents []string) []string {
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
	out := s.run(t, dir, nil, list.String(), "hash-object", "-w", "--no-filters", "--stdin-paths")
	shas := strings.Fields(out)
	if len(shas) != len(contents) {
		t.Fatalf("gitserver: hash-object returned %d objects for %d files", len(shas), len(contents))
	}
	return shas
}
