package gitsource_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestShortRevision(t *testing.T) {
	for _, tc := range []struct {
		name, rev, want string
	}{
		{"full SHA", "0123456789abcdef0123456789abcdef01234567", "0123456789ab"},
		{"twelve", "0123456789ab", "0123456789ab"},
		{"thirteen", "0123456789abc", "0123456789ab"},
		{"shorter", "abc", "abc"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gitsource.ShortRevision(tc.rev)); diff != "" {
				t.Errorf("ShortRevision(%q) (-want +got):\n%s", tc.rev, diff)
			}
		})
	}
}
