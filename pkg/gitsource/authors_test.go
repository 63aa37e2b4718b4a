package gitsource_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestAuthors(t *testing.T) {
	srv := gitserver.New(t)
	url, base := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	alice := srv.Repo("manifests").Push(t, gitserver.Commit{Branch: "main", Author: gitserver.Person{Name: "Alice", Email: "Alice@Acme.example"}, Files: map[string]string{"a.json": "1"}, Message: "alice"})
	var chain []string
	for i := range 70 { // past the first deepening step: the walk deepens the shallow cache
		chain = append(chain, srv.Repo("manifests").Commit(t, "main", map[string]string{"n.json": strings.Repeat("x", i+1)}, "step"))
	}
	bob := srv.Repo("manifests").Push(t, gitserver.Commit{Branch: "main", Author: gitserver.Person{Name: "Bob", Email: "bob@acme.example"}, Files: map[string]string{"b.json": "1"}, Message: "bob"})
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

// TestAuthorsCommitterAndCoAuthors: four-eyes keeps out whoever committed someone else's commit and the
// co-authors its message names, not only its author.
func TestAuthorsCommitterAndCoAuthors(t *testing.T) {
	srv := gitserver.New(t)
	url, base := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	head := srv.Repo("manifests").Push(t, gitserver.Commit{
		Branch: "main", Files: map[string]string{"c.json": "1"},
		Author:    gitserver.Person{Name: "Carol", Email: "carol@acme.example"},
		Committer: gitserver.Person{Name: "Dave", Email: "Dave@acme.example"},
		Message:   "carol's change\n\nCo-authored-by: Erin <Erin@Acme.example>\nco-authored-by: frank@acme.example\nCo-authored-by: nobody\n",
	})
	if snap := poll(t, s); snap.Revision != head {
		t.Fatalf("poll = %s, want %s", snap.Revision, head)
	}
	got, err := s.Authors(context.Background(), base, head)
	want := []string{"carol@acme.example", "dave@acme.example", "erin@acme.example", "frank@acme.example"}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("Authors = %v (-want +got):\n%s", err, diff)
	}
}

func TestCoAuthors(t *testing.T) {
	for _, tt := range []struct {
		name, message string
		want          []string
	}{
		{name: "none", message: "a change\n\nSigned-off-by: A <a@acme.example>\n", want: nil},
		{name: "trailers", message: "x\n\nCo-authored-by: Erin <Erin@Acme.example>\nCO-AUTHORED-BY:  Frank Z <frank@acme.example> \n",
			want: []string{"erin@acme.example", "frank@acme.example"}},
		{name: "repeated and re-cased once", message: "Co-authored-by: E <e@a.example>\nCo-authored-by: E2 <E@A.example>\n", want: []string{"e@a.example"}},
		{name: "a bare address", message: "Co-authored-by: g@acme.example", want: []string{"g@acme.example"}},
		{name: "no address names nobody", message: "Co-authored-by: somebody\nCo-authored-by: <>\n", want: nil},
		{name: "in the body too, CRLF", message: "x\r\nCo-authored-by: H <h@acme.example>\r\nmore text\r\n", want: []string{"h@acme.example"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, gitsource.CoAuthors(tt.message)); diff != "" {
				t.Errorf("CoAuthors (-want +got):\n%s", diff)
			}
		})
	}
}
