package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoAuto runs the whole demo non-interactively, checks that every step
// happened, and that nothing it started is left afterwards.
func TestDemoAuto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, options{auto: true, listen: "127.0.0.1:0", out: &out, in: strings.NewReader("")})
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
}
