package gitserver

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// command is one git invocation: the binary, the directory it runs in, environment added to the server's
// fixed one (no system or global configuration, the test identity as author and committer) and its input.
type command struct {
	bin   string
	dir   string
	env   []string
	stdin string
}

// with returns c with env added to its environment.
func (c command) with(env ...string) command {
	c.env = append(append([]string(nil), c.env...), env...)
	return c
}

// run runs git args and returns its trimmed standard output; it fails the test on error.
func (c command) run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.output(args...)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return out
}

// output runs git args and returns its trimmed standard output.
func (c command) output(args ...string) (string, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME="+testName,
		"GIT_AUTHOR_EMAIL="+testEmail,
		"GIT_COMMITTER_NAME="+testName,
		"GIT_COMMITTER_EMAIL="+testEmail,
	), c.env...)
	if c.stdin != "" {
		cmd.Stdin = strings.NewReader(c.stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
