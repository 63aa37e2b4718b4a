package testenv

import (
	"path/filepath"
	"testing"
)

func TestOptionsCheckCRDPaths(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{"none", nil, false},
		{"a directory", []Option{WithCRDs(dir), WithRollouts()}, false},
		{"no path", []Option{WithCRDs()}, true},
		{"empty path", []Option{WithCRDs(dir, "")}, true},
		{"missing path", []Option{WithCRDs(filepath.Join(dir, "missing.yaml"))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := makeOptions(tc.opts...); (err != nil) != tc.wantErr {
				t.Errorf("makeOptions: error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
