package gitserver

import "testing"

// Commit is Repo(repo).Commit, kept for internal/daemon's tests until their call sites move.
//
// Deprecated: use Repo(repo).Commit.
func (s *Server) Commit(t testing.TB, repo, branch string, files map[string]string, msg string) string {
	t.Helper()
	return s.Repo(repo).Commit(t, branch, files, msg)
}

// CommitAs is Repo(repo).Push with one person as author and committer, kept for internal/daemon's tests
// until their call sites move.
//
// Deprecated: use Repo(repo).Push.
func (s *Server) CommitAs(t testing.TB, repo, branch, name, email string, files map[string]string, msg string) string {
	t.Helper()
	return s.Repo(repo).Push(t, Commit{Branch: branch, Files: files, Message: msg, Author: Person{Name: name, Email: email}})
}
