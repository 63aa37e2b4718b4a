package prbot

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

const (
	owner = "acme"
	repo  = "manifests"
)

// fixture is a manifests repository on the GitHub test server and a bot for it.
type fixture struct {
	srv   *githubtest.Server
	gh    *github.Client
	locks *lock.Service
	lockC LockChecker
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	srv := githubtest.New(t)
	srv.CreateRepo(owner, repo, "main")
	if len(files) > 0 {
		srv.Commit(owner, repo, "main", files, "seed")
	}
	gh, err := github.NewClient(srv.Client()).WithAuthToken(srv.Token()).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	h, err := lock.NewHandler(svc, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(h)
	t.Cleanup(ls.Close)
	lc, err := lock.NewClient(ls.URL, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, gh: gh, locks: svc, lockC: LockClient(lc)}
}

func (f *fixture) bot(t *testing.T, opts ...Option) *Bot {
	t.Helper()
	opts = append([]Option{WithLocks(f.lockC), WithPollInterval(10 * time.Millisecond)}, opts...)
	b, err := New(f.gh, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) lock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.locks.Lock(context.Background(), lock.Lock{Path: path, Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) unlock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.locks.Unlock(context.Background(), path, lock.Incident, false); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) openPulls() []githubtest.PullRequest {
	var out []githubtest.PullRequest
	for _, p := range f.srv.PullRequests(owner, repo) {
		if p.State == "open" {
			out = append(out, p)
		}
	}
	return out
}

func (f *fixture) file(t *testing.T, ref, path string) string {
	t.Helper()
	s, ok := f.srv.File(owner, repo, ref, path)
	if !ok {
		t.Fatalf("no %s at %s", path, ref)
	}
	return s
}

// changedLines returns the lines of a and b that differ, position by position
// (both must have the same number of lines), as "-old" / "+new" pairs.
func changedLines(t *testing.T, a, b string) []string {
	t.Helper()
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		t.Fatalf("line count changed from %d to %d:\n%s\n---\n%s", len(la), len(lb), a, b)
	}
	var out []string
	for i := range la {
		if la[i] != lb[i] {
			out = append(out, "-"+la[i], "+"+lb[i])
		}
	}
	return out
}

// waitFor polls cond until it holds or the test's patience runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
