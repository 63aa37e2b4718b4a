package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// TestBreakGlassCommand: `reconciler break-glass` needs --env, --plan-hash and --reason, and is a client
// of POST …/break-glass on the real daemon: a stale hash and an environment without windows are refused
// with the server's words (exit 1), and the cluster is not touched.
func TestBreakGlassCommand(t *testing.T) {
	server, tokenFile, ns, d := approveWorld(t)
	var pending *approval.Pending
	deadline := time.Now().Add(30 * time.Second)
	for pending == nil {
		if v, err := d.Environment(context.Background(), "prod"); err == nil {
			pending = v.Pending
		}
		if time.Now().After(deadline) {
			t.Fatal("no pending plan in prod within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := []string{"break-glass", "--server", server, "--env", "prod", "--token-file", tokenFile}
	for _, tt := range []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no plan hash", append(base, "--reason", "INC-42"), 2, "--plan-hash is required"},
		{"no reason", append(base, "--plan-hash", pending.PlanHash), 2, "--reason is required"},
		{"a forged reason", append(base, "--plan-hash", pending.PlanHash, "--reason", "x\ny"), 1, "refused (400): reason: break-glass reason refused"},
		{"a stale hash", append(base, "--plan-hash", "sha256:old", "--reason", "INC-42"), 1, "refused (403)"},
		{"no windows to break", append(base, "--plan-hash", pending.PlanHash, "--reason", "INC-42"), 1,
			"refused (403): token:dana may not approve this plan of environment prod: environment prod has no deploy windows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runDecision(t, false, "", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
	if got := cluster.Env(t).Image(t, ns, "web"); got != "example.com/web:1.0.0" {
		t.Errorf("web runs %s after refused break-glasses", got)
	}
}
