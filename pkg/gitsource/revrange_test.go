package gitsource_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestRange(t *testing.T) {
	srv := gitserver.New(t)
	url, base := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	risky := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/prod/manifest.json": `{"services":[1]}`},
		"prod: payments 2.0\n\nChange-Risk: high\nticket: OPS-1\n")
	var chain []string
	for i := range 70 { // past the first deepening step: the walk deepens the shallow cache
		chain = append(chain, srv.Repo("manifests").Commit(t, "main", map[string]string{"n.json": strings.Repeat("x", i+1)}, "step"))
	}
	head := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": `{"services":[2]}`},
		"devel: web\n\nChange-Risk: low\nCo-authored-by: Erin\n <erin@acme.example>\n")
	if snap := poll(t, s); snap.Revision != head {
		t.Fatalf("poll = %s, want %s", snap.Revision, head)
	}
	tests := []struct {
		name       string
		base, head string
		want       gitsource.Range
	}{
		{name: "the head commit alone without a base", head: head, want: gitsource.Range{
			Files:    []string{"environments/devel/manifest.json"},
			Trailers: map[string][]string{"Change-Risk": {"low"}, "Co-Authored-By": {"Erin <erin@acme.example>"}}}},
		{name: "since the seed, across the shallow end", base: base, head: head, want: gitsource.Range{
			Files: []string{"environments/devel/manifest.json", "environments/prod/manifest.json", "n.json"},
			Trailers: map[string][]string{"Change-Risk": {"low", "high"}, "Co-Authored-By": {"Erin <erin@acme.example>"},
				"Ticket": {"OPS-1"}}}},
		{name: "the base excluded", base: risky, head: chain[1], want: gitsource.Range{Files: []string{"n.json"}, Trailers: map[string][]string{}}},
		{name: "nothing between", base: head, head: head, want: gitsource.Range{Files: []string{}, Trailers: map[string][]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Range(context.Background(), tt.base, tt.head)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Range (-want +got):\n%s", diff)
			}
		})
	}
	// A force-push onto a new root: its own files, as a root commit adds them.
	rewritten := srv.Repo("manifests").ForcePush(t, gitserver.Commit{Branch: "main", Files: map[string]string{"r.json": "rewritten"}, Message: "rewritten"})
	if snap := poll(t, s); snap.Revision != rewritten {
		t.Fatalf("poll after force-push = %s, want %s", snap.Revision, rewritten)
	}
	got, err := s.Range(context.Background(), head, rewritten)
	if diff := cmp.Diff(gitsource.Range{Files: []string{"r.json"}, Trailers: map[string][]string{}}, got); err != nil || diff != "" {
		t.Errorf("Range(old head, rewritten root) = %v (-want +got):\n%s", err, diff)
	}
	if _, err := s.Range(context.Background(), "main", head); err == nil || !strings.Contains(err.Error(), `revision "main": want a full 40-digit commit SHA`) {
		t.Errorf("Range(main, ...) = %v, want the branch name refused", err)
	}
}

func TestTrailers(t *testing.T) {
	for _, tt := range []struct {
		name, message string
		want          []gitsource.Trailer
	}{
		{name: "a subject alone has none", message: "Change-Risk: low\n", want: nil},
		{name: "the last paragraph", message: "fix\n\nbody text\n\nchange-risk: low\nSigned-off-by: A <a@acme.example>\n",
			want: []gitsource.Trailer{{"Change-Risk", "low"}, {"Signed-Off-By", "A <a@acme.example>"}}},
		{name: "CRLF and trailing blank lines", message: "fix\r\n\r\nChange-Risk:  high \r\n\r\n\r\n",
			want: []gitsource.Trailer{{"Change-Risk", "high"}}},
		{name: "a continuation line", message: "fix\n\nNote: one\n  two\n", want: []gitsource.Trailer{{"Note", "one two"}}},
		{name: "a paragraph with prose is no trailer block", message: "fix\n\nChange-Risk: low\nthis is prose\n", want: nil},
		{name: "a space before the colon is no key", message: "fix\n\nChange Risk: low\n", want: nil},
		{name: "in the body, not the last paragraph", message: "fix\n\nChange-Risk: low\n\nmore prose\n", want: nil},
		{name: "an empty value is dropped", message: "fix\n\nChange-Risk:\nTicket: OPS-2\n", want: []gitsource.Trailer{{"Ticket", "OPS-2"}}},
		{name: "a continuation first is no block", message: "fix\n\n  Change-Risk: low\n", want: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, gitsource.Trailers(tt.message)); diff != "" {
				t.Errorf("Trailers (-want +got):\n%s", diff)
			}
		})
	}
}
