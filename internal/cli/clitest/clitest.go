// Package clitest holds the worlds that the tests of internal/cli and of
// the command packages under it share: a real daemon and API for the
// commands that wait on a deploy (WaitWorld). It is test infrastructure: it
// builds what a test needs, where the commands get theirs from
// internal/wire.
package clitest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// WaitToken is the read-only token of WaitWorld's API.
const WaitToken = "wait-test-token-readonly"

// WaitWorld runs on env a real daemon (leader, no rollout wait, polling git
// every 200ms) over devel (skipConfirmation) and prod, each asking for
// web:2.0.0 while the cluster runs web:1.0.0, and the API with a read-only
// token (WaitToken); extra are more options of the daemon, given its
// configuration. base is `reconciler wait`'s arguments for that API
// (--server at base[2], --token-file at base[4]); the world ends with t.
func WaitWorld(t *testing.T, env *testenv.Env, extra ...func(*config.Config) daemon.Option) (base []string, git *gitserver.Server, d *daemon.Daemon) {
	t.Helper()
	git = gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
		"environments/prod/manifest.json":  `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "both")
	envs := map[string]config.Environment{}
	for _, e := range []string{"devel", "prod"} {
		ns := env.Namespace(t)
		env.CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
		envs[e] = config.Environment{LockPath: "apps/" + e, Targets: []config.Target{{Name: "a", Namespace: ns}}}
	}
	stateNS := env.Namespace(t)
	f := false
	cfg := &config.Config{
		Source:       config.Source{URL: url, Branch: "main", Interval: config.Duration{Duration: 200 * time.Millisecond}},
		Environments: envs,
		Registry:     config.Registry{VerifyDigests: &f, PinDigests: &f},
		Locks:        config.Locks{Storage: "kubernetes", Namespace: stateNS},
		State:        config.State{Namespace: stateNS},
	}
	cfg.Default()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.New(cfg, append(wire.DaemonOptions("wait-test", logr.Discard()), wire.WithRESTConfig(env.Config),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0)), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()), gitsource.WithJitter(0)))...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, daemon.WithLeaderElection(daemon.LeaderElection{}))
	for _, x := range extra {
		parts = append(parts, x(cfg))
	}
	if d, err = daemon.New(cfg, parts...); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.WithTokens(auth.Token{Name: "ci", Token: WaitToken, Scopes: []string{"read"}}))
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
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(WaitToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"wait", "--server", "http://" + ln.Addr().String(), "--token-file", tokenFile, "--interval", "100ms"}, git, d
}
