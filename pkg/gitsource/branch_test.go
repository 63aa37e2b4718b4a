package gitsource_test

import (
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestValidBranch(t *testing.T) {
	for b, want := range map[string]bool{
		"main": true, "release/1.2": true, "feature_x-y": true,
		"": false, "a..b": false, "a b": false, "-x": false, "x.lock": false, "x/": false, "/x": false,
		".hidden": false, "a/.b": false, "a@{1}": false, "a~1": false, "a^": false, "a:b": false, "a*": false, "a[": false, `a\b`: false, "@": false, "a.": false,
	} {
		if got := gitsource.ValidBranch(b); got != want {
			t.Errorf("ValidBranch(%q) = %v, want %v", b, got, want)
		}
	}
}
