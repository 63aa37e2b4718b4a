package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkParse parses yaml and checks that it fails with an error containing
// wantErr, or, when wantErr is empty, that section of the result equals want.
func checkParse[T any](t *testing.T, yaml, wantErr string, want T, section func(*Config) T) {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, section(c)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
