package command

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth/login"
)

// TokenFlag is where a command was told its token is: File, given to the
// flag Flag (such as --token-file), for the flag User that needs it (such
// as --server).
type TokenFlag struct {
	File, Flag, User string
}

// UserToken is the bearer token a person's (or a job's) command sends to
// the reconciler's API, from the first of: the file of the flag f.Flag,
// $STAGEHAND_TOKEN, $GITHUB_TOKEN, `gh auth token` when gh is on PATH, and
// the token `reconciler login` saved. Without any it is a usage error that
// says how to get one to the flag f.User.
func UserToken(ctx context.Context, lookup func(string) (string, bool), f TokenFlag) (string, error) {
	file, flag, user := f.File, f.Flag, f.User
	if file != "" {
		t, err := ReadSecret(file, flag)
		if err != nil {
			return "", Usage(err)
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
	if t := login.SavedToken(lookup); t != "" {
		return t, nil
	}
	return "", Usagef("%s needs a token: pass %s, set $STAGEHAND_TOKEN or $GITHUB_TOKEN, log in to gh, or run reconciler login", user, flag)
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
