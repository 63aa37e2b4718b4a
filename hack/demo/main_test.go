package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/cli"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestDemoAuto runs the whole demo non-interactively, checks that every step
// happened, and that nothing it started is left afterwards.
func TestDemoAuto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	envFile := filepath.Join(t.TempDir(), "demo.env")
	err := run(ctx, options{auto: true, listen: "127.0.0.1:0", envFile: envFile, out: &out, in: strings.NewReader("")})
	text := out.String()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, text)
	}
	if !strings.HasPrefix(text, "Dashboard: http://127.0.0.1:") {
		t.Errorf("the output does not start with the dashboard's URL:\n%s", text)
	}
	for _, want := range []string{
		"Dashboard on http://",
		"See it on the page: http://",
		"devel deployed and rolled out",
		"checkout-api   1.4.0 → 1.5.0",
		"live: patched",
		"pending plan sha256:",
		"approved by token:demo",
		"succeeded",
		"prod runs what its manifest says and has rolled out",
		"deployed and verified; waiting for its release approval",
		"released by token:demo: succeeded",
		"staging approved by token:demo, deployed and verified: succeeded",
		"Demo finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Torn down: the API port is closed and the demo's directory is gone.
	if m := regexp.MustCompile(`API on http://(\S+)`).FindStringSubmatch(text); m == nil {
		t.Errorf("no API address in the output")
	} else if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
		c.Close()
		t.Errorf("the reconciler still listens on %s after the demo", m[1])
	}
	if m := regexp.MustCompile(`config\s+(\S+)`).FindStringSubmatch(text); m == nil {
		t.Errorf("no config path in the output")
	} else if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("demo files left behind: %s (%v)", m[1], err)
	}
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("the env file is left behind: %s (%v)", envFile, err)
	}
}

// TestDemoDecidedElsewhere walks the demo as docs/getting-started/demo.md says: the demo waits at each
// decision, and the approvals come from another terminal (the reconciler CLI with what bin/demo.env
// holds), not from Enter. The demo notices each one and goes on to the next step; before, it waited for
// prod's approval to reach the history, which only its release does, and then for a release that had
// already happened, and failed after two minutes.
func TestDemoDecidedElsewhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := &testenv.Buffer{}
	envFile := filepath.Join(t.TempDir(), "demo.env")
	stdin, keyboard := io.Pipe() // a terminal on which nobody presses Enter
	defer keyboard.Close()
	demoCtx, stopDemo := context.WithCancel(ctx)
	defer stopDemo()
	done := make(chan error, 1)
	go func() {
		done <- run(demoCtx, options{listen: "127.0.0.1:0", envFile: envFile, out: out, in: stdin})
	}()
	// waitFor waits until the demo has printed want n times, or fails.
	waitFor := func(want string, n int) {
		t.Helper()
		for strings.Count(out.String(), want) < n {
			select {
			case err := <-done:
				t.Fatalf("the demo ended (%v) before printing %q %d times:\n%s", err, want, n, out.String())
			case <-ctx.Done():
				t.Fatalf("the demo did not print %q %d times:\n%s", want, n, out.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	hashes := regexp.MustCompile(`--plan-hash (sha256:[0-9a-f]{64})`)
	// approve runs, as from another terminal after source bin/demo.env, reconciler approve of the
	// plan hash the demo printed last.
	approve := func(env string) {
		t.Helper()
		all := hashes.FindAllStringSubmatch(out.String(), -1)
		if len(all) == 0 {
			t.Fatalf("no plan hash printed:\n%s", out.String())
		}
		var stdout, stderr bytes.Buffer
		cmd := cli.NewReconciler(&stdout, &stderr)
		cmd.SetArgs([]string{"approve", "--env", env, "--plan-hash", all[len(all)-1][1], "--wait"})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("reconciler approve --env %s: %v\n%s%s", env, err, stdout.String(), stderr.String())
		}
	}

	waitFor("press Enter and the demo runs it", 1)
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STAGEHAND_SERVER", "STAGEHAND_TOKEN", "KUBECONFIG"} {
		m := regexp.MustCompile(`(?m)^export ` + want + `=(\S+)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("%s does not export %s:\n%s", envFile, want, b)
		}
		t.Setenv(want, m[1])
	}
	approve("prod") // step 8: prod's plan
	waitFor("press Enter and the demo runs it", 2)
	approve("prod") // step 9: its release
	waitFor("press Enter and the demo runs it", 3)
	approve("staging") // step 10
	waitFor("Everything keeps running", 1)
	stopDemo() // Ctrl-C
	if err := <-done; err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"prod runs what its manifest says and has rolled out",
		"released by token:demo: succeeded",
		"staging approved by token:demo, deployed and verified: succeeded",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "decided elsewhere"); n != 3 {
		t.Errorf("the demo noticed %d decisions taken elsewhere, want 3:\n%s", n, text)
	}
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("the env file is left behind: %s (%v)", envFile, err)
	}
}
