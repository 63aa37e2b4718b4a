package gitsource_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

func TestAuthors(t *testing.T) {
	srv := gitserver.New(t)
	url, base := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	alice := srv.CommitAs(t, "manifests", "main", "Alice", "Alice@Acme.example", map[string]string{"a.json": "1"}, "alice")
	var chain []string
	for i := range 70 { // past the first deepening step: the walk deepens the shallow cache
		chain = append(chain, srv.Commit(t, "manifests", "main", map[string]string{"n.json": strings.Repeat("x", i+1)}, "step"))
	}
	bob := srv.CommitAs(t, "manifests", "main", "Bob", "bob@acme.example", map[string]string{"b.json": "1"}, "bob")
	if snap := poll(t, s); snap.Revision != bob {
		t.Fatalf("poll = %s, want %s", snap.Revision, bob)
	}
	tests := []struct {
		name       string
		base, head string
		want       []string
	}{
		{name: "the head commit alone without a base", base: "", head: bob, want: []string{"bob@acme.example"}},
		{name: "one commit", base: chain[len(chain)-1], head: bob, want: []string{"bob@acme.example"}},
		{name: "since the seed, across the shallow end", base: base, head: bob,
			want: []string{"alice@acme.example", "bob@acme.example", "test@stagehand.invalid"}},
		{name: "the base excluded", base: alice, head: chain[0], want: []string{"test@stagehand.invalid"}},
		{name: "nothing between", base: bob, head: bob, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Authors(context.Background(), tt.base, tt.head)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Authors (-want +got):\n%s", diff)
			}
		})
	}
	// A force-push back onto chain[10]: the commits of the new head since its merge base with the old one.
	rewritten := gitPush(t, url, map[string]string{"r.json": "rewritten"}, "", chain[10])
	if snap := poll(t, s); snap.Revision != rewritten {
		t.Fatalf("poll after force-push = %s, want %s", snap.Revision, rewritten)
	}
	got, err := s.Authors(context.Background(), bob, rewritten)
	if diff := cmp.Diff([]string{"tester@stagehand.invalid"}, got); err != nil || diff != "" {
		t.Errorf("Authors(old head, rewritten head) = %v (-want +got):\n%s", err, diff)
	}
	if _, err := s.Authors(context.Background(), "main", bob); err == nil || !strings.Contains(err.Error(), `revision "main": want a full 40-digit commit SHA`) {
		t.Errorf("Authors(main, ...) = %v, want the branch name refused", err)
	}
}
