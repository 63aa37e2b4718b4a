package tally

import (
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

func TestAuthorMatch(t *testing.T) {
	authors := []string{"alice@acme.example", "bob", "carol@users.noreply.github.com"}
	for _, tc := range []struct {
		who, want string
	}{
		{"alice", "alice@acme.example"},
		{"Alice@ACME.example", "alice@acme.example"},
		{"@bob", "bob"},
		{"BOB", "bob"},
		{"carol", "carol@users.noreply.github.com"},
		{"dave", ""},
		{"acme.example", ""},
		{"", ""},
	} {
		t.Run(tc.who, func(t *testing.T) {
			got, ok := authorMatch(tc.who, authors)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("authorMatch(%q) = %q, %v; want %q", tc.who, got, ok, tc.want)
			}
		})
	}
}

func TestFourEyesBase(t *testing.T) {
	ok, pinned, rejected := approval.ResultSucceeded, approval.ResultSucceeded, approval.ResultRejected
	for _, tt := range []struct {
		name    string
		history []approval.Entry
		want    string
	}{
		{name: "nothing applied", history: nil, want: ""},
		{name: "the last apply", history: []approval.Entry{{Revision: "c", Result: rejected}, {Revision: "b", Result: ok}, {Revision: "a", Result: ok}}, want: "b"},
		{name: "a pinned apply measures from the revision rolled back to",
			history: []approval.Entry{{Revision: "c", Result: pinned, PinnedTo: "a"}, {Revision: "c", Result: ok}, {Revision: "a", Result: ok}}, want: "a"},
		{name: "an apply after the pin", history: []approval.Entry{{Revision: "d", Result: ok}, {Revision: "c", Result: pinned, PinnedTo: "a"}}, want: "d"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fourEyesBase(tt.history); got != tt.want {
				t.Errorf("fourEyesBase = %q, want %q", got, tt.want)
			}
		})
	}
}
