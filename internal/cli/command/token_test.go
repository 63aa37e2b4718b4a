package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/auth/login"
)

// TestUserTokenOrder: --token-file, then $STAGEHAND_TOKEN, then
// $GITHUB_TOKEN, then gh auth token, then the token reconciler login saved.
func TestUserTokenOrder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := login.SaveToken(filepath.Join(dir, "cfg", "stagehand", "token"), "from-login"); err != nil {
		t.Fatal(err)
	}
	// A fake gh on PATH that prints its token.
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\n[ \"$1 $2\" = \"auth token\" ] && echo from-gh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"file first", file, map[string]string{"STAGEHAND_TOKEN": "s", "GITHUB_TOKEN": "g", "PATH": bin}, "from-file"},
		{"stagehand token", "", map[string]string{"STAGEHAND_TOKEN": "s", "GITHUB_TOKEN": "g", "PATH": bin}, "s"},
		{"github token", "", map[string]string{"GITHUB_TOKEN": "g", "PATH": bin}, "g"},
		{"gh", "", map[string]string{"PATH": bin, "XDG_CONFIG_HOME": filepath.Join(dir, "cfg")}, "from-gh"},
		{"login", "", map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "cfg")}, "from-login"},
		{"none", "", map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "empty")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := UserToken(context.Background(), lookup, TokenFlag{File: tc.file, Flag: "--token-file", User: "--server"})
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "--server needs a token: pass --token-file, set $STAGEHAND_TOKEN or $GITHUB_TOKEN, log in to gh, or run reconciler login") {
					t.Errorf("UserToken = %q %v, want the usage error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("UserToken = %q %v, want %q", got, err, tc.want)
			}
		})
	}
}
