package login

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TokenPath is where a login's token is kept: stagehand/token under
// $XDG_CONFIG_HOME, else the user's configuration directory. lookup reads
// the environment.
func TokenPath(lookup func(string) (string, bool)) (string, error) {
	if dir, _ := lookup("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "stagehand", "token"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration directory: %w", err)
	}
	return filepath.Join(dir, "stagehand", "token"), nil
}

// SaveToken writes tok to path, readable by the user only, replacing what
// was there at once (a reader sees the old token or the new, never half).
func SaveToken(path, tok string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("saving the token: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("saving the token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("saving the token: %w", err), os.Remove(tmp))
	}
	return nil
}

// SavedToken is the token a login saved ("" when there is none).
func SavedToken(lookup func(string) (string, bool)) string {
	path, err := TokenPath(lookup)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
