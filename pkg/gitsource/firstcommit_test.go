package gitsource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// pushAt commits files onto url's main as go-git would, committed at when
// and authored a day earlier (FirstCommit reads the committer's time), and
// pushes; it returns the SHA.
func pushAt(t testing.TB, url string, files map[string]string, when time.Time) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	author := &object.Signature{Name: "Tester", Email: "tester@stagehand.invalid", When: when.Add(-24 * time.Hour)}
	committer := &object.Signature{Name: "Tester", Email: "tester@stagehand.invalid", When: when}
	h, err := wt.Commit("change", &git.CommitOptions{Author: author, Committer: committer})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := r.Push(&git.PushOptions{}); err != nil {
		t.Fatalf("push: %v", err)
	}
	return h.String()
}

func TestFirstCommit(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	deployed := pushAt(t, url, map[string]string{"a.json": "0"}, t0)
	var chain []string
	for i := range 70 { // past the first deepening step: the walk deepens the shallow cache
		chain = append(chain, pushAt(t, url, map[string]string{"a.json": strings.Repeat("x", i+1)}, t0.Add(time.Duration(i+1)*time.Minute)))
	}
	if snap := poll(t, s); snap.Revision != chain[len(chain)-1] {
		t.Fatalf("poll = %s, want %s", snap.Revision, chain[len(chain)-1])
	}
	head := chain[len(chain)-1]
	tests := []struct {
		name       string
		base, head string
		want       time.Time
	}{
		{name: "the head alone without a base", base: "", head: head, want: t0.Add(70 * time.Minute)},
		{name: "one commit", base: chain[68], head: head, want: t0.Add(70 * time.Minute)},
		{name: "the oldest of the range, across the shallow end", base: deployed, head: head, want: t0.Add(time.Minute)},
		{name: "the base itself excluded", base: deployed, head: chain[0], want: t0.Add(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FirstCommit(context.Background(), tt.base, tt.head)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("FirstCommit = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := s.FirstCommit(context.Background(), head, head); !errors.Is(err, gitsource.ErrNoCommits) {
		t.Errorf("FirstCommit(head, head) = %v, want ErrNoCommits", err)
	}
	if _, err := s.FirstCommit(context.Background(), "main", head); err == nil || !strings.Contains(err.Error(), `revision "main": want a full 40-digit commit SHA`) {
		t.Errorf("FirstCommit(main, ...) = %v, want the branch name refused", err)
	}
}
