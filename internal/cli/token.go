package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// userToken is the bearer token a person's (or a job's) command sends to
// the reconciler's API, from the first of: the file of the flag named flag,
// $STAGEHAND_TOKEN, $GITHUB_TOKEN, `gh auth token` when gh is on PATH, and
// the token `reconciler login` saved. Without any it is a usage error that
// says how to get one to the flag user (such as --server).
func userToken(ctx context.Context, lookup func(string) (string, bool), file, flag, user string) (string, error) {
	if file != "" {
		t, err := readSecret(file, flag)
		if err != nil {
			return "", usageError{err}
		}
		return t, nil
	}
	for _, name := range []string{"STAGEHAND_TOKEN", "GITHUB_TOKEN"} {
		if t, _ := lookup(name); strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t), nil
		}
	}
	if t := ghAuthToken(ctx, lookup); t != "" {
		return t, nil
	}
	if path, err := loginTokenPath(lookup); err == nil {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b)), nil
		}
	}
	return "", usagef("%s needs a token: pass %s, set $STAGEHAND_TOKEN or $GITHUB_TOKEN, log in to gh, or run reconciler login", user, flag)
}

// ghAuthToken asks the GitHub CLI for its token, if gh is on $PATH and
// logged in; "" otherwise (gh's failure is not the command's).
func ghAuthToken(ctx context.Context, lookup func(string) (string, bool)) string {
	path, _ := lookup("PATH")
	gh := ""
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, "gh"); isExecutable(p) {
			gh = p
			break
		}
	}
	if gh == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, gh, "auth", "token").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// loginTokenPath is where `reconciler login` keeps the token: stagehand/token
// under $XDG_CONFIG_HOME, else the user's configuration directory.
func loginTokenPath(lookup func(string) (string, bool)) (string, error) {
	if dir, _ := lookup("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "stagehand", "token"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration directory: %w", err)
	}
	return filepath.Join(dir, "stagehand", "token"), nil
}

// saveLoginToken writes tok to path, readable by the user only.
func saveLoginToken(path, tok string) error {
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
