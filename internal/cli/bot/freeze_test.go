package bot

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// watcherToken is the test's own, for reading the reconciler's view (prbot's token keeps its rate).
const watcherToken = "freeze-test-watcher-token"

// frozenReconciler runs a real daemon and its API (a read-only token) deploying staging, whose
// reconciler.yaml has a deny window "year-end" from an hour ago until freezeEnd (judged on the API
// server's clock); it returns the API's URL and a file holding the token.
func frozenReconciler(t *testing.T, freezeEnd time.Time) (server, tokenFile string) {
	t.Helper()
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/staging/manifest.json": `{"services": [{"name": "checkout-api", "containers": [{"dockerTag": "1.4.0"}]}]}`,
	}, "staging")
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "checkout-api", "example.com/checkout-api:1.4.0")
	f := false
	cfg := &config.Config{
		Source: config.Source{URL: url, Branch: "main", Interval: config.Duration{Duration: time.Hour}},
		Environments: map[string]config.Environment{"staging": {LockPath: "apps/staging", Targets: []config.Target{{Name: "a", Namespace: ns}},
			Windows: policy.Windows{Deny: []policy.Window{{Name: "year-end",
				From: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), To: freezeEnd.UTC().Format(time.RFC3339)}}}}},
		Registry: config.Registry{VerifyDigests: &f, PinDigests: &f},
		Locks:    config.Locks{Storage: "kubernetes", Namespace: ns},
		State:    config.State{Namespace: ns},
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.New(cfg, append(wire.DaemonOptions("freeze-test", logr.Discard()), wire.WithRESTConfig(env.Config),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0)), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())))...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(cfg, append(parts, daemon.WithLeaderElection(daemon.LeaderElection{}))...)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.WithTokens(auth.Token{Name: "prbot", Token: clitest.WaitToken, Scopes: []string{"read"}},
		auth.Token{Name: "watcher", Token: watcherToken, Scopes: []string{"read"}}))
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
	if err := os.WriteFile(tokenFile, []byte(clitest.WaitToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String(), tokenFile
}

// TestPrbotPromoteIntoFrozenReconciler: `prbot promote --lock-server` against a real reconciler whose
// staging has a deny window in force. prbot runs two hours ahead (the fault suite's clock offset, as a
// process with $STAGEHAND_FAKETIME_OFFSET has it): by its own clock the freeze ended long ago, yet the
// promotion is held, because the reconciler judges its windows on the API server's clock: nothing is
// opened, and the check run on main says the stage is frozen and when it opens. Once the reconciler's
// view shows the windows open (awaited, not slept for), the same promotion opens its pull request.
func TestPrbotPromoteIntoFrozenReconciler(t *testing.T) {
	// Long enough for the daemon to start and prbot to be held once on this machine; the test waits
	// for the reconciler to say the windows opened, which they do at freezeEnd.
	freezeEnd := time.Now().Add(40 * time.Second).Truncate(time.Second)
	server, tokenFile := frozenReconciler(t, freezeEnd)
	srv, environ := prbotRepo(t)
	srv.Repo("acme", "manifests").Commit("main", map[string]string{
		"pipeline.yaml": "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    lockPath: apps/staging\n    requires: {healthy: false}\n",
	}, "lock path for staging")
	promote := func() (string, string, int) {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging",
			"--lock-server", server, "--lock-token-file", tokenFile})
		deps := prbotDeps{
			lookup: func(k string) (string, bool) { v, ok := environ[k]; return v, ok },
			now:    func() time.Time { return time.Now().Add(2 * time.Hour) },
		}
		err := root.ExecuteContext(withPrbotDeps(context.Background(), deps))
		if err != nil {
			errOut.WriteString("Error: " + err.Error() + "\n")
		}
		return out.String(), errOut.String(), command.Code(err)
	}
	c, err := api.NewClient(server, watcherToken)
	if err != nil {
		t.Fatal(err)
	}
	// windowsOpen waits, reading the reconciler's view four times a second, until it judges staging's
	// windows open (or closed).
	windowsOpen := func(want bool, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			v, err := c.Environment(context.Background(), "staging")
			if err == nil && v.Windows != nil && v.Windows.Open == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the reconciler never judged staging's windows open=%v within %s: %+v, %v", want, within, v, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	windowsOpen(false, 30*time.Second)

	const why = "stage staging is frozen: its deploy windows are closed: inside the deny window year-end; opens "
	out, errOut, code := promote()
	if code != 0 || !strings.HasPrefix(out, "devel → staging: blocked\n"+why+freezeEnd.UTC().Format("Mon 2 Jan 2006 15:04")+" UTC") {
		t.Fatalf("promote into the frozen stage: exit %d, stdout %q, stderr %q; want blocked, saying when the windows open", code, out, errOut)
	}
	if time.Now().After(freezeEnd) {
		t.Fatal("the freeze ended before prbot was held: the case needs a longer freeze on this machine")
	}
	if n := len(srv.Repo("acme", "manifests").PullRequests()); n != 0 {
		t.Fatalf("%d pull requests opened into a frozen stage", n)
	}
	var notes []string
	for _, cr := range srv.Repo("acme", "manifests").CheckRuns() {
		if cr.Name == "stagehand/promote-devel-staging" {
			notes = append(notes, cr.Conclusion+": "+cr.Summary)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "neutral: Not opening a promotion from devel to staging: "+why) {
		t.Errorf("check runs stagehand/promote-devel-staging = %q, want one neutral run saying the stage is frozen", notes)
	}

	// The freeze ends on the API server's clock: the reconciler says so, and the promotion goes ahead.
	windowsOpen(true, time.Until(freezeEnd)+30*time.Second)
	out, errOut, code = promote()
	if code != 0 || !strings.HasPrefix(out, "devel → staging: opened http") {
		t.Fatalf("promote once the windows opened: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if prs := srv.Repo("acme", "manifests").PullRequests(); len(prs) != 1 || !strings.Contains(prs[0].Title, "staging") {
		t.Errorf("pull requests = %+v; want the one promotion into staging", prs)
	}
}
