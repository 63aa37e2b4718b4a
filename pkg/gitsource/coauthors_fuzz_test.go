package gitsource_test

import (
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// FuzzCoAuthors: a commit message is whatever the pusher wrote. Every co-author CoAuthors reads from one is
// an address written in it (lower case, trimmed, one line, with an @), named once, and no more than the
// message has lines.
func FuzzCoAuthors(f *testing.F) {
	for _, seed := range []string{
		"x\n\nCo-authored-by: Erin <Erin@Acme.example>\n",
		"co-authored-by:a@b\r\nCO-AUTHORED-BY: <A@B>\n",
		"Co-authored-by: <<x@y>>\nCo-authored-by: >a@b<\nCo-authored-by: \u00c9 <\u00c9@\u00e9.example>",
		"Co-authored-by:",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, message string) {
		got := gitsource.CoAuthors(message)
		lower := strings.ToLower(message)
		seen := map[string]bool{}
		for _, e := range got {
			switch {
			case seen[e]:
				t.Errorf("%q named twice in %q", e, got)
			case e != strings.ToLower(e), e != strings.TrimSpace(e), !strings.Contains(e, "@"), strings.ContainsAny(e, "\r\n"):
				t.Errorf("co-author %q: want a trimmed lower-case address on one line", e)
			case !strings.Contains(lower, e):
				t.Errorf("co-author %q is not written in the message", e)
			}
			seen[e] = true
		}
		if lines := strings.Count(message, "\n") + 1; len(got) > lines {
			t.Errorf("%d co-authors from %d lines", len(got), lines)
		}
	})
}
