package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// gitCLI runs git in dir as a person would, with a throw-away HOME.
func gitCLI(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Alice", "GIT_AUTHOR_EMAIL=alice@stagehand.invalid",
		"GIT_COMMITTER_NAME=Alice", "GIT_COMMITTER_EMAIL=alice@stagehand.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestForcePushToOlderSignedCommit: devel (skipConfirmation) verifies SSH
// signatures; a force-push back to an older, validly signed commit is not
// applied automatically but waits for approval, flagged "history rewritten"
// in the plan and the status — unless source.allowRewrite, which applies it
// and records the flag in the history.
func TestForcePushToOlderSignedCommit(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	for _, allowRewrite := range []bool{false, true} {
		t.Run("allowRewrite="+map[bool]string{false: "false", true: "true"}[allowRewrite], func(t *testing.T) {
			h := newHarness(t, "devel")
			key := filepath.Join(t.TempDir(), "id_ed25519")
			if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen: %v: %s", err, out)
			}
			pub, _ := os.ReadFile(key + ".pub")
			signers := filepath.Join(t.TempDir(), "allowed_signers")
			if err := os.WriteFile(signers, []byte(`alice@stagehand.invalid namespaces="git" `+string(pub)), 0o600); err != nil {
				t.Fatal(err)
			}
			h.cfg.Source.Verify = &config.Verify{Mode: "head", AllowedSignersFile: signers}
			h.cfg.Source.AllowRewrite = allowRewrite

			dir := t.TempDir()
			gitCLI(t, dir, "clone", "-q", h.url, ".")
			gitCLI(t, dir, "config", "gpg.format", "ssh")
			gitCLI(t, dir, "config", "user.signingkey", key)
			signed := func(tag string) string {
				t.Helper()
				p := filepath.Join(dir, "environments", "devel", "manifest.json")
				if err := os.WriteFile(p, []byte(manifestJSON(true, map[string]string{"web": tag})), 0o644); err != nil {
					t.Fatal(err)
				}
				gitCLI(t, dir, "commit", "-q", "--allow-empty", "-S", "-am", "web "+tag)
				gitCLI(t, dir, "push", "-q", "origin", "HEAD:main")
				return gitCLI(t, dir, "rev-parse", "HEAD")
			}
			old := signed("1.0.0")
			r := h.start()
			waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
			newer := signed("1.1.0")
			r.push(t, h, "delivery-1")
			waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.1.0")

			gitCLI(t, dir, "push", "-q", "--force", "origin", old+":main")
			r.push(t, h, "delivery-2")
			if allowRewrite {
				waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
				var hist []approval.Entry
				testenv.WaitFor(t, 30*time.Second, "the rewound apply in the history", func() bool {
					hist = r.history(t, "devel")
					return len(hist) > 0 && hist[0].Revision == old
				})
				if hist[0].HistoryRewritten != newer || hist[0].Approver != approval.AutoApprover {
					t.Errorf("history entry %+v, want historyRewritten %s applied by %s", hist[0], newer, approval.AutoApprover)
				}
				return
			}
			p := r.waitPending(t, "devel", old)
			var plan struct{ HistoryRewritten string }
			if err := json.Unmarshal(p.Plan, &plan); err != nil || plan.HistoryRewritten != newer {
				t.Errorf("pending plan historyRewritten = %q (%v), want %s", plan.HistoryRewritten, err, newer)
			}
			// The status is written as the pass that proposed the plan ends.
			var v status.Environment
			rewritten := func() bool {
				v = r.environment(t, "devel")
				return slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, "history rewritten") })
			}
			testenv.WaitFor(t, 30*time.Second, "a status warning that the history was rewritten", rewritten)
			time.Sleep(time.Second)
			if got := cluster.Env(t).Image(t, h.ns["devel"], "web"); got != imageRepo+"web:1.1.0" {
				t.Errorf("devel runs %s after a force-push to an older commit, want web:1.1.0 until approved", got)
			}
		})
	}
}
