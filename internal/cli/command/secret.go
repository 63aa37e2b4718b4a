package command

import (
	"fmt"
	"os"
	"strings"
)

// ReadSecret reads a secret file, trimming surrounding whitespace; what
// names it in errors (a flag, a configuration key).
func ReadSecret(path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("reading %s: %s is empty", what, path)
	}
	return s, nil
}

// APIToken is the bearer token of the reconciler's API, shared by the lock
// commands and prbot: read from file (passed with the flag named flag), else
// $STAGEHAND_TOKEN. Without either it is a usage error that says how to pass
// one to the flag user (such as --server).
func APIToken(lookup func(string) (string, bool), file, flag, user string) (string, error) {
	if file != "" {
		t, err := ReadSecret(file, flag)
		if err != nil {
			return "", Usage(err)
		}
		return t, nil
	}
	if t, _ := lookup("STAGEHAND_TOKEN"); strings.TrimSpace(t) != "" {
		return strings.TrimSpace(t), nil
	}
	return "", Usagef("%s needs a token: pass %s or set $STAGEHAND_TOKEN", user, flag)
}
