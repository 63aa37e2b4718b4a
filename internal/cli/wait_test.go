package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// pendingAt waits until prod's pending plan is at revision and returns its hash.
func pendingAt(t *testing.T, d *daemon.Daemon, revision string) string {
	t.Helper()
	var hash string
	testenv.WaitFor(t, 30*time.Second, "prod's plan at "+revision[:12], func() bool {
		v, err := d.Environment(context.Background(), "prod")
		if err == nil && v.Pending != nil && v.Pending.Revision == revision {
			hash = v.Pending.PlanHash
		}
		return hash != ""
	})
	return hash
}

// TestWaitCommand: `reconciler wait` with a read-only token, on the real
// daemon: exit 0 once devel deployed the revision (by the head, by prefix,
// by a service's version); 2 when prod, awaiting approval, times out; 1
// when prod's plan is rejected, and 1 when the revision waited for is
// superseded by a newer one before it is deployed, saying which.
func TestWaitCommand(t *testing.T) {
	base, git, d := clitest.WaitWorld(t, cluster.Env(t))
	head := git.Head(t, "manifests", "main")
	run := func(args ...string) (string, string, int) {
		return runReconciler(t, append(append([]string(nil), base...), args...)...)
	}

	if out, errOut, code := run("--env", "devel", "--timeout", "60s"); code != 0 || !strings.Contains(out, "deployed") {
		t.Errorf("wait for devel: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run("--env", "devel", "--revision", head[:7], "--timeout", "10s"); code != 0 {
		t.Errorf("wait for devel at %s: exit %d\n%s%s", head[:7], code, out, errOut)
	}
	if out, errOut, code := run("--env", "devel", "--service", "web=2.0.0", "--timeout", "10s"); code != 0 {
		t.Errorf("wait for devel's web=2.0.0: exit %d\n%s%s", code, out, errOut)
	}

	hash := pendingAt(t, d, head)
	if out, errOut, code := run("--env", "prod", "--timeout", "1s"); code != 2 || !strings.Contains(errOut, "timed out") || !strings.Contains(out, "AwaitingApproval") {
		t.Errorf("wait for prod awaiting approval: exit %d, want 2\n%s%s", code, out, errOut)
	}

	// Rejected while waiting.
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := d.Reject(context.Background(), "prod", hash, approval.Why{By: identity.Principal{ID: identity.Parse("token:ops")}, Reason: "not today"}); err != nil {
			t.Errorf("rejecting prod: %v", err)
		}
	}()
	if out, errOut, code := run("--env", "prod", "--revision", head, "--timeout", "60s"); code != 1 || !strings.Contains(errOut, "rejected") {
		t.Errorf("wait for prod, rejected: exit %d, want 1 saying rejected\n%s%s", code, out, errOut)
	}

	// Superseded: a newer commit asks prod for another version before the
	// one waited for is deployed.
	second := git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "3.0.0"}]}]}`}, "prod 3.0.0")
	pendingAt(t, d, second)
	go func() {
		time.Sleep(300 * time.Millisecond)
		git.Repo("manifests").Commit(t, "main", map[string]string{
			"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "4.0.0"}]}]}`}, "prod 4.0.0")
	}()
	if out, errOut, code := run("--env", "prod", "--revision", second, "--timeout", "60s"); code != 1 || !strings.Contains(errOut, "superseded") {
		t.Errorf("wait for prod at %s, superseded: exit %d, want 1 saying superseded\n%s%s", second[:7], code, out, errOut)
	}

	if _, errOut, code := run("--env", "nope", "--timeout", "10s"); code != 1 || !strings.Contains(errOut, "refused (404)") {
		t.Errorf("wait for an unknown environment: exit %d, want 1\n%s", code, errOut)
	}
	if _, errOut, code := run("--env", "prod", "--revision", "xyz"); code != 2 {
		t.Errorf("wait --revision xyz: exit %d, want 2 (usage)\n%s", code, errOut)
	}
}
