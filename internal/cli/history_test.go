package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// TestHistoryCommand: after an approved apply, `history` lists it as entry 1
// and `history --id 1` shows the manifest resolved at its revision.
func TestHistoryCommand(t *testing.T) {
	server, tokenFile, _, d := approveWorld(t)
	base := []string{"--server", server, "--env", "prod", "--token-file", tokenFile}
	ctx := context.Background()
	if out, _, code := runDecision(t, false, "", append([]string{"history"}, base...)...); code != 0 || !strings.Contains(out, "prod: no history yet") {
		t.Fatalf("history before any apply: exit %d, %q", code, out)
	}
	var pending *approval.Pending
	for deadline := time.Now().Add(30 * time.Second); pending == nil; time.Sleep(50 * time.Millisecond) {
		if v, err := d.Environment(ctx, "prod"); err == nil {
			pending = v.Pending
		}
		if time.Now().After(deadline) {
			t.Fatal("no pending plan in prod within 30s")
		}
	}
	if _, err := d.Approve(ctx, "prod", pending.PlanHash, ghUser("dana")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if h, err := d.History(ctx, "prod"); err == nil && len(h) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no history entry in prod within 30s")
		}
	}

	out, stderr, code := runDecision(t, false, "", append([]string{"history"}, base...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("history: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	for _, want := range []string{"1 ", pending.Revision[:12], "succeeded", "dana", "1 image(s): web"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("history row %q lacks %q", lines[1], want)
		}
	}

	out, stderr, code = runDecision(t, false, "", append([]string{"history", "--id", "1"}, base...)...)
	for _, want := range []string{"Entry:     1", "Revision:  " + pending.Revision, "example.com/web:1.0.0", "example.com/web:2.0.0",
		"Manifest:  environments/prod/manifest.json", "web      -        web    2.0.0", "environments/prod/manifest.json  "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("history --id 1 lacks %q: exit %d\nstdout %s\nstderr %s", want, code, out, stderr)
		}
	}

	out, _, code = runDecision(t, false, "", append([]string{"history", "--id", "1", "-o", "json"}, base...)...)
	var e approval.Entry
	if err := json.Unmarshal([]byte(out), &e); err != nil || code != 0 {
		t.Fatalf("history --id 1 -o json: exit %d, %v\n%s", code, err, out)
	}
	if e.ID != 1 || e.Manifest == nil || len(e.Manifest.Files) != 1 || len(e.Manifest.Files[0].Blob) != 40 ||
		len(e.Manifest.Services) != 1 || e.Manifest.Services[0].Containers[0].DockerTag != "2.0.0" {
		t.Errorf("entry 1 as JSON = %+v, manifest %+v", e, e.Manifest)
	}

	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"unknown id", []string{"history", "--id", "7"}, 1, "unknown history entry 7 in environment prod: it holds entries 1 to 1"},
		{"zero id", []string{"history", "--id", "0"}, 2, "want a positive history entry id"},
		{"bad output", []string{"history", "-o", "yaml"}, 2, `--output "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runDecision(t, false, "", append(tc.args, base...)...)
			if code != tc.code || !strings.Contains(stderr, tc.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.inStderr)
			}
		})
	}
}

// ghUser is the principal of the GitHub user login.
func ghUser(login string) identity.Principal {
	return identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: login}}
}
