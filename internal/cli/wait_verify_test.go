package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// TestWaitFailedVerification: `reconciler wait` exits 1 saying the deploy
// failed when the revision it waits for is deployed but its sequence's test
// fails, on the real daemon (the sequence from the manifests repository's
// pipeline.yaml, its test task the daemon's WithTask).
func TestWaitFailedVerification(t *testing.T) {
	failing := func(context.Context, sequence.Request) (sequence.Result, error) {
		return sequence.Result{Result: promote.ResultFail, Message: "2 of 3 requests answered 503"}, nil
	}
	base, git, _ := clitest.WaitWorld(t, cluster.Env(t), func(*config.Config) daemon.Option { return daemon.WithTask(promote.TaskTest, failing) })
	head := git.Repo("manifests").Commit(t, "main", map[string]string{
		"pipeline.yaml": "stages:\n  - name: devel\n    sequence:\n      - deployment\n      - name: test\n" +
			"        properties: {kind: http, url: \"http://web/healthz\"}\n",
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "3.0.0"}]}]}`,
	}, "devel 3.0.0, verified by a test")
	out, errOut, code := runReconciler(t, append(base, "--env", "devel", "--revision", head, "--timeout", "60s")...)
	if code != 1 || !strings.Contains(errOut, "failed") || !strings.Contains(out+errOut, "503") {
		t.Errorf("wait for devel at %s, its test failing: exit %d, want 1 saying failed and why\n%s%s", head[:7], code, out, errOut)
	}
}
