package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// approveToken is dana's: the history records her name, whatever the CLI sends.
const approveToken = "approve-test-token-dana"

// approveWorld runs a real daemon (leader, no rollout wait) over a git server
// whose prod manifest asks for web:2.0.0 while the cluster runs web:1.0.0.
func approveWorld(t *testing.T, files ...map[string]string) (server, tokenFile, ns string, d *daemon.Daemon) {
	t.Helper()
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	commit := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`}
	for _, f := range files {
		maps.Copy(commit, f)
	}
	git.Repo("manifests").Commit(t, "main", commit, "prod")
	ns = env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
	f := false
	cfg := &config.Config{
		Source:       config.Source{URL: url, Branch: "main", Interval: config.Duration{Duration: time.Hour}},
		Environments: map[string]config.Environment{"prod": {LockPath: "apps/prod", Targets: []config.Target{{Name: "a", Namespace: ns}}}},
		Registry:     config.Registry{VerifyDigests: &f, PinDigests: &f},
		Locks:        config.Locks{Storage: "kubernetes", Namespace: ns},
		State:        config.State{Namespace: ns},
	}
	cfg.Default()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.New(cfg, append(wire.DaemonOptions("approve-test", logr.Discard()), wire.WithRESTConfig(env.Config),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0)), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())))...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	d, err = daemon.New(cfg, append(parts, daemon.WithLeaderElection(daemon.LeaderElection{}))...)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.WithTokens(auth.Token{Name: "dana", Token: approveToken, Scopes: []string{"read", "approve:*"}}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(d, api.WithAuthenticator(authn))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeWhile(ctx, ln, d.Run) }()
	t.Cleanup(func() { cancel(); <-done })
	tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(approveToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String(), tokenFile, ns, d
}

func TestApproveCommand(t *testing.T) {
	server, tokenFile, ns, d := approveWorld(t)
	var pending *approval.Pending
	deadline := time.Now().Add(30 * time.Second)
	for pending == nil {
		v, err := d.Environment(context.Background(), "prod")
		if err == nil {
			pending = v.Pending
		}
		if time.Now().After(deadline) {
			t.Fatal("no pending plan in prod within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := []string{"--server", server, "--env", "prod", "--token-file", tokenFile}
	wrongToken := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongToken, []byte("nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no server", []string{"approve", "--env", "prod", "--plan-hash", "h"}, 2, "--server is required"},
		{"bad server", []string{"approve", "--server", "localhost:1", "--env", "prod", "--plan-hash", "h", "--token-file", tokenFile}, 2, "want an http(s) URL"},
		{"no hash and no terminal", append([]string{"approve"}, base...), 2, "no terminal to confirm on: pass --plan-hash"},
		{"both hash and yes", append([]string{"approve", "--plan-hash", "h", "--yes"}, base...), 2, "--plan-hash and --yes are mutually exclusive"},
		{"empty token file", []string{"approve", "--server", server, "--env", "prod", "--plan-hash", pending.PlanHash, "--token-file", os.DevNull}, 2, "is empty"},
		{"wrong token", []string{"approve", "--server", server, "--env", "prod", "--plan-hash", pending.PlanHash, "--token-file", wrongToken}, 1, "refused (401)"},
		{"stale hash", append([]string{"approve", "--plan-hash", "sha256:old"}, base...), 1, "pending now is plan " + pending.PlanHash},
		{"unknown env", []string{"reject", "--server", server, "--env", "qa", "--plan-hash", "h", "--token-file", tokenFile}, 1, "unknown environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runDecision(t, false, "", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Fatalf("refused approvals changed the cluster: %s", img)
	}

	// On a terminal: the pending plan and its hash are shown, and only "y" approves.
	stdout, stderr, code := runDecision(t, true, "n\n", append([]string{"approve"}, base...)...)
	if code != 1 || !strings.Contains(stdout, "planHash "+pending.PlanHash) || !strings.Contains(stdout, "example.com/web:2.0.0") ||
		!strings.Contains(stdout, "Approve plan "+pending.PlanHash+" for prod") || !strings.Contains(stderr, "Not approved") {
		t.Fatalf("approve answered n: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:1.0.0" {
		t.Fatalf("a declined approval changed the cluster: %s", img)
	}

	stdout, stderr, code = runDecision(t, true, "y\n", append([]string{"approve", "--as", "dana", "--wait"}, base...)...)
	if code != 0 || !strings.Contains(stdout, "approved by token:dana") || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("approve --wait: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("after approve the deployment runs %s, want web:2.0.0", img)
	}
	req, _ := http.NewRequest("GET", server+"/api/v1/environments/prod/history", nil)
	req.Header.Set("Authorization", "Bearer "+approveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ History []approval.Entry }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || len(h.History) != 1 || h.History[0].Approver != "token:dana" {
		t.Errorf("history = %+v (%v), want one entry approved by dana", h.History, err)
	}
}

// runDecision runs reconciler args with stdin as input, on a terminal or not.
func runDecision(t *testing.T, terminal bool, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	err := cmd.ExecuteContext(context.WithValue(context.Background(), terminalKey{}, terminal))
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}

// TestApproveWaitRelease: where prod's sequence has a release approval
// ([deployment, approval, release], a person approving the plan first),
// `approve --wait` ends once the plan is deployed and waits for its release,
// saying so (exit 0; it waited until its --timeout before), and approving
// again releases it and prints the result.
func TestApproveWaitRelease(t *testing.T) {
	server, tokenFile, ns, d := approveWorld(t, map[string]string{"pipeline.yaml": "stages: [{name: prod, sequence: [deployment, approval, release]}]\n"})
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
	args := []string{"approve", "--server", server, "--env", "prod", "--token-file", tokenFile, "--plan-hash", pending.PlanHash, "--wait", "--timeout", "30s"}
	stdout, stderr, code := runDecision(t, false, "", args...)
	want := "prod: revision " + pending.Revision + " deployed and verified; waiting for its release approval"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("approve --wait: exit %d\nstdout %s\nstderr %s\nwant it to say %q", code, stdout, stderr, want)
	}
	if img := cluster.Env(t).Image(t, ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("prod runs %s after the approval, want web:2.0.0", img)
	}
	stdout, stderr, code = runDecision(t, false, "", args...)
	if code != 0 || !strings.Contains(stdout, "prod: revision "+pending.Revision+" succeeded") {
		t.Errorf("approve --wait of the release: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
