package gitsource_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

// BenchmarkNoopPoll measures a poll when nothing changed: one ls-remote
// against git http-backend on loopback, no fetch. Target: < 20 ms. For
// scale, the same request made by `git ls-remote` (the git CLI) is measured too.
func BenchmarkNoopPoll(b *testing.B) {
	srv := gitserver.New(b)
	url, _ := seed(b, srv)
	b.Run("gitsource", func(b *testing.B) {
		s := newSource(b, sourceSpec(url))
		poll(b, s)
		srv.ResetRequests()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Poll(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if got := srv.Requests(); got.UploadPack != 0 || got.InfoRefs != b.N {
			b.Fatalf("requests = %+v for %d polls, want one info/refs each and no fetch", got, b.N)
		}
	})
	b.Run("git-cli-ls-remote", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			gitCLI(b, "", "ls-remote", url, "refs/heads/main")
		}
	})
}

// history builds a repository of n commits with git fast-import: 40
// environments × 5 service files, each commit editing one file.
func history(b *testing.B, srv *gitserver.Server, name string, n int) string {
	b.Helper()
	url := srv.Init(b, name)
	var stream strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter Bench <bench@stagehand.invalid> %d +0000\n", 1700000000+i)
		msg := fmt.Sprintf("bump %d", i)
		fmt.Fprintf(&stream, "data %d\n%s\n", len(msg), msg)
		files := 1
		if i == 0 {
			files = 200 // the first commit writes the whole tree
		}
		for f := 0; f < files; f++ {
			k := f
			if i > 0 {
				k = i % 200
			}
			content := fmt.Sprintf(`{"services":[{"name":"svc-%d","containers":[{"dockerTag":"1.0.%d"}]}]}`+"\n", k, i)
			fmt.Fprintf(&stream, "M 100644 inline environments/env-%02d/svc-%d.json\ndata %d\n%s\n", k/5, k, len(content), content)
		}
	}
	srv.Git(b, name, stream.String(), "fast-import", "--quiet")
	if got := srv.Git(b, name, "", "rev-list", "--count", "main"); got != fmt.Sprint(n) {
		b.Fatalf("built %s commits, want %d", got, n)
	}
	return url
}

// BenchmarkIncrementalFetch measures bringing one new commit into a cache of
// a 5,000-commit repository: gitsource's whole poll (ls-remote + shallow
// fetch + checks) side by side with the git CLI fetching the same commit into
// a shallow and into a full bare clone. Target: gitsource ≤ 2× git CLI.
func BenchmarkIncrementalFetch(b *testing.B) {
	srv := gitserver.New(b)
	url := history(b, srv, "big", 5000)
	n := 0
	newCommit := func(b *testing.B) {
		n++
		srv.Repo("big").Commit(b, "main", map[string]string{fmt.Sprintf("environments/env-07/svc-%d.json", 35+n%5): fmt.Sprintf(`{"n":%d}`, n)}, "one more")
	}

	b.Run("gitsource", func(b *testing.B) {
		s := newSource(b, sourceSpec(url))
		poll(b, s)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			newCommit(b)
			want := srv.Head(b, "big", "main")
			b.StartTimer()
			snap, err := s.Poll(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if snap.Revision != want {
				b.Fatalf("revision %s, want %s", snap.Revision, want)
			}
		}
	})
	for _, mode := range []struct {
		name  string
		clone []string
		fetch []string
	}{
		{name: "git-cli-shallow",
			clone: []string{"clone", "--quiet", "--bare", "--depth=1", "--single-branch", "--no-tags"},
			fetch: []string{"fetch", "--quiet", "--depth=1", "--no-tags", "origin", "+refs/heads/main:refs/heads/main"}},
		{name: "git-cli-full",
			clone: []string{"clone", "--quiet", "--bare", "--single-branch", "--no-tags"},
			fetch: []string{"fetch", "--quiet", "--no-tags", "origin", "+refs/heads/main:refs/heads/main"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "cache.git")
			gitCLI(b, "", append(mode.clone, url, dir)...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				newCommit(b)
				want := srv.Head(b, "big", "main")
				b.StartTimer()
				gitCLI(b, dir, mode.fetch...)
				b.StopTimer()
				if got := gitCLI(b, dir, "rev-parse", "refs/heads/main"); got != want {
					b.Fatalf("git fetched %s, want %s", got, want)
				}
				b.StartTimer()
			}
		})
	}
}

func gitCLI(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
