package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// skew is how far the replicas' clocks are off: one runs ahead of the API
// server, GitHub and this test by skew, the other behind by as much.
const skew = 2 * time.Hour

// offsetEnv shifts the clock of a process of the fault suite's binaries
// (built with the stagehand_faketime tag; see internal/clock).
func offsetEnv(d time.Duration) string { return "STAGEHAND_FAKETIME_OFFSET=" + d.String() }

// lockTTL is the life of the locks the case takes; soak the promotion's.
const (
	lockTTL = 3 * time.Second
	soak    = 4 * time.Second
)

// TestClockSkew: replica-a runs two hours ahead, replica-b two hours behind
// (the API server, GitHub and the test on the real time). Both measure the
// API server's clock; a lock taken with a duration through the standby's
// API, and one by the `reconciler lock` CLI two hours ahead, each blocks
// the leader's deploy until it expires by the API server's clock, and both
// replicas show the same expiry; check runs complete on GitHub's clock, so
// prbot, itself two hours off either way, judges the soak neither early nor
// late; the leader keeps the Lease while alive and the other takes it
// within the lease duration when it is killed; history times are on the API
// server's clock.
func TestClockSkew(t *testing.T) {
	const n = 3
	prbotBinary(t) // built before the soak is timed
	started := time.Now().Add(-time.Second)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	files := manifest(n, "1.0.0")
	files["pipeline.yaml"] = fmt.Sprintf("stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    requires: {healthy: true, soak: %s}\n", soak)
	files["environments/staging/manifest.json"] = manifest(n, "1.0.0")["environments/devel/manifest.json"]
	f := newFixture(t, files)
	gh.Repo("acme", "manifests").MirrorCommit("main", f.git.Head(t, "manifests", "main"), files, "first")
	f.workloads(t, n)
	f.config["locks"] = map[string]any{"storage": "kubernetes", "namespace": f.ns}
	f.withGitHub(t, gh)
	ctx := t.Context()

	a := f.start(t, "replica-a", nil, offsetEnv(skew))
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	b := f.start(t, "replica-b", nil, offsetEnv(-skew))
	for _, c := range []struct {
		r    *replica
		want time.Duration
	}{{a, -skew}, {b, skew}} {
		testenv.WaitFor(t, 60*time.Second, c.r.name+" measuring the API server's clock "+c.want.String()+" from its own", func() bool {
			return math.Abs(c.r.metric(ctx, "stagehand_clock_offset_seconds")-c.want.Seconds()) < 2
		})
	}
	leaseWatch := f.watchHolders(t, "stagehand-reconciler")

	// A lock through the API of the standby, two hours behind.
	if code := b.do(ctx, http.MethodPost, f.token, "/api/v1/locks", fmt.Sprintf(`{"path": "apps/devel", "type": "deploy", "author": "operator", "duration": %q}`, lockTTL), nil); code != http.StatusCreated {
		t.Fatalf("POST /api/v1/locks on replica-b = %d", code)
	}
	rev2 := f.commitMirrored(t, gh, manifest(n, "2.0.0"), "to 2.0.0 under a lock taken on replica-b")
	f.blockedUntilExpiry(t, a, b, n, "2.0.0", rev2)

	// A lock by the CLI two hours ahead, straight to the Kubernetes storage.
	cli := exec.CommandContext(ctx, reconcilerBinary(t), "lock", "apps/devel", "--storage", "kubernetes", "--namespace", f.ns,
		"--kubeconfig", f.env.Kubeconfig, "--author", "operator", "--duration", lockTTL.String())
	cli.Env = append(os.Environ(), offsetEnv(skew), "HOME="+f.dir)
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("reconciler lock: %v\n%s", err, out)
	}
	rev3 := f.commitMirrored(t, gh, manifest(n, "3.0.0"), "to 3.0.0 under a lock taken by the CLI")
	f.blockedUntilExpiry(t, a, b, n, "3.0.0", rev3)

	// replica-a (ahead) completed rev3's check run: on GitHub's clock.
	run3 := f.completedRun(t, gh, rev3)
	// prbot two hours behind: soaking until completed_at+soak, then promotes.
	if res := f.promote(t, gh, -skew); time.Since(run3.CompletedAt) < soak-time.Second {
		if len(res.Decision.Changes) != 0 || len(res.Decision.Held) == 0 || res.Decision.Held[0].Until.Sub(run3.CompletedAt.Add(soak)).Abs() > time.Second {
			t.Errorf("prbot at %s, %s after the success: %s, %+v; want held, soaking until %s (completed_at + soak)",
				-skew, time.Since(run3.CompletedAt).Round(100*time.Millisecond), res.Action, res.Decision, run3.CompletedAt.Add(soak))
		}
	} else {
		t.Logf("the soak of %s ended before prbot answered: its start is not checked", soak)
	}
	time.Sleep(time.Until(run3.CompletedAt.Add(soak + 1500*time.Millisecond)))
	if res := f.promote(t, gh, -skew); res.Action != "opened" || len(res.Decision.Changes) != n {
		t.Errorf("prbot at %s, %s after the soak began: %s, %+v; want the promotion opened with %d changes", -skew, time.Since(run3.CompletedAt).Round(time.Second), res.Action, res.Decision, n)
	}

	// The leader dies: replica-b takes the Lease within its duration.
	if got := b.metric(ctx, "stagehand_leadership_changes_total"); got != 0 {
		t.Errorf("replica-b changed leadership %v times while replica-a led", got)
	}
	if h := leaseWatch.holders(); len(h) != 1 || h[0] != "replica-a" {
		t.Errorf("Lease holders while replica-a lived: %v, want only replica-a", h)
	}
	a.kill(t)
	killed := time.Now()
	testenv.WaitFor(t, 30*time.Second, "replica-b holding the Lease", func() bool { return f.holder(ctx) == "replica-b" })
	takeover := time.Since(killed)
	const acquired = `stagehand_leadership_changes_total{change="acquired",environment=""}`
	testenv.WaitFor(t, 30*time.Second, "replica-b counting the Lease it acquired", func() bool { return b.metric(ctx, acquired) == 1 })
	if takeover > leaseDuration+2*retryPeriod+2*time.Second { // the standby judges expiry from when it saw the last renewal
		t.Errorf("replica-b took the Lease %s after replica-a was killed, want within the lease duration %s", takeover.Round(100*time.Millisecond), leaseDuration)
	}
	rev4 := f.commitMirrored(t, gh, manifest(n, "4.0.0"), "to 4.0.0 after replica-a died")
	f.applied(t, b, n, "4.0.0", rev4, time.Minute)
	recovered := time.Since(killed)
	run4 := f.completedRun(t, gh, rev4)
	// prbot two hours ahead, on a success replica-b (behind) recorded: still soaking.
	res := f.promote(t, gh, skew)
	if since := time.Since(run4.CompletedAt); since < soak-time.Second {
		if len(res.Decision.Held) == 0 || !strings.Contains(res.Decision.Held[0].Reason, "soaking") {
			t.Errorf("prbot at %s, %s after replica-b's success: %s, %+v; want held, soaking", skew, since.Round(100*time.Millisecond), res.Action, res.Decision)
		}
	} else {
		t.Logf("the soak of %s ended before prbot answered: replica-b's success is not checked", soak)
	}

	// History: one succeeded entry per revision, every time on the API server's clock.
	hist, ok := f.history(ctx, b)
	if !ok {
		t.Fatal("replica-b's history unreadable")
	}
	now := time.Now().Add(time.Second)
	seen := map[string]int{}
	for _, e := range hist {
		seen[e.Revision]++
		if e.Started.Before(started) || e.Finished.After(now) || e.Finished.Before(e.Started) {
			t.Errorf("history entry %d (%s): started %s, finished %s; want %s ≤ started ≤ finished ≤ %s",
				e.ID, e.Revision[:8], e.Started, e.Finished, started, now)
		}
	}
	for _, rev := range []string{rev2, rev3, rev4} {
		if seen[rev] != 1 {
			t.Errorf("%d history entries of %s, want 1", seen[rev], rev[:8])
		}
	}
	twice := 0
	counts := f.patches(t)
	for i := range n {
		if c := counts[svc(i)]; c > 3 { // one patch per revision: 2.0.0, 3.0.0, 4.0.0
			twice++
			t.Errorf("%s patched %d times for three plans", svc(i), c)
		}
	}
	if tr := f.leaseTransitions(ctx, "stagehand-reconciler"); tr != 1 {
		t.Errorf("leader Lease transitions = %d, want 1 (replica-a, then replica-b once it died)", tr)
	}
	if v := gh.TakeViolations(); len(v) > 0 {
		t.Errorf("requests GitHub's API description refuses: %v", v)
	}
	table.add(t, row{fault: "7 replica clocks ±2 h apart", survived: true, twice: twice, recover: recovered,
		note: fmt.Sprintf("locks by a -2 h API and a +2 h CLI held to the API server's expiry; soak judged on GitHub's clock by prbot at ±2 h; Lease taken %.1f s after the kill; seconds from the kill to the next revision applied", takeover.Seconds())})
}

// withGitHub points the configuration at gh: check runs on acme/manifests.
func (f *fixture) withGitHub(t *testing.T, gh *githubtest.Server) {
	t.Helper()
	for name, content := range map[string][]byte{"app.pem": gh.App().PrivateKeyPEM(), "hook": []byte("hook-secret\n")} {
		if err := os.WriteFile(filepath.Join(f.dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.config["github"] = map[string]any{"apiURL": gh.URL(), "owner": "acme", "repo": "manifests",
		"webhookSecretFile": filepath.Join(f.dir, "hook"),
		"app":               map[string]any{"appID": gh.App().ID(), "installationID": gh.App().InstallationID(), "privateKeyFile": filepath.Join(f.dir, "app.pem")}}
}

// commitMirrored commits files to the git server and the same commit to gh.
func (f *fixture) commitMirrored(t *testing.T, gh *githubtest.Server, files map[string]string, msg string) string {
	t.Helper()
	rev := f.git.Repo("manifests").Commit(t, "main", files, msg)
	gh.Repo("acme", "manifests").MirrorCommit("main", rev, files, msg)
	return rev
}

// blockedUntilExpiry checks that the deploy lock on apps/devel shows the
// same expiry on both replicas, about lockTTL from now on the API server's
// clock, that rev is not applied before it, and is applied soon after.
func (f *fixture) blockedUntilExpiry(t *testing.T, leader, other *replica, n int, version, rev string) {
	t.Helper()
	ctx := t.Context()
	var exp []time.Time
	for _, r := range []*replica{leader, other} {
		var lr struct {
			Lock struct {
				ExpiresAt int64 `json:"expires_at"`
			} `json:"lock"`
		}
		if code := r.get(ctx, f.token, "/api/v1/locks/apps/devel?type=deploy", &lr); code != http.StatusOK {
			t.Fatalf("GET /api/v1/locks/apps/devel on %s = %d", r.name, code)
		}
		exp = append(exp, time.Unix(lr.Lock.ExpiresAt, 0))
	}
	if !exp[0].Equal(exp[1]) {
		t.Errorf("the lock expires at %s on %s and %s on %s, want one expiry", exp[0], leader.name, exp[1], other.name)
	}
	if d := time.Until(exp[0]); d < 0 || d > lockTTL+time.Second {
		t.Fatalf("a %s lock expires in %s by the API server's clock", lockTTL, d)
	}
	for time.Until(exp[0]) > 500*time.Millisecond {
		imgs, err := f.images(ctx)
		if err == nil && imgs[svc(0)] == image(0, version) {
			t.Fatalf("%s applied %s before the lock on apps/devel expired (%s left)", leader.name, version, time.Until(exp[0]).Round(100*time.Millisecond))
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.applied(t, leader, n, version, rev, 30*time.Second)
	if late := time.Since(exp[0]); late > 10*time.Second {
		t.Errorf("%s applied %s %s after the lock expired", leader.name, version, late.Round(100*time.Millisecond))
	}
}

// completedRun waits for rev's stagehand/devel check run to complete
// successfully and checks that completed_at is GitHub's time of it.
func (f *fixture) completedRun(t *testing.T, gh *githubtest.Server, rev string) githubtest.CheckRun {
	t.Helper()
	var run githubtest.CheckRun
	testenv.WaitFor(t, 30*time.Second, "the check run of "+rev[:8]+" completed", func() bool {
		for _, r := range gh.Repo("acme", "manifests").CheckRuns() {
			if r.HeadSHA == rev && r.Name == "stagehand/devel" && r.Status == "completed" && r.Conclusion == "success" {
				run = r
				return true
			}
		}
		return false
	})
	if d := time.Since(run.CompletedAt); d < 0 || d > 30*time.Second {
		t.Errorf("check run of %s completed_at %s, %s from GitHub's time of completion", rev[:8], run.CompletedAt, d.Round(time.Second))
	}
	return run
}

// promotion is the part of `prbot promote -o json` the case reads.
type promotion struct {
	Action   string `json:"action"`
	Decision struct {
		Changes []struct {
			Service string `json:"service"`
		} `json:"changes"`
		Held []struct {
			Service string    `json:"service"`
			Reason  string    `json:"reason"`
			Until   time.Time `json:"until"`
		} `json:"held"`
	} `json:"decision"`
}

// promote runs `prbot promote devel → staging` with its clock off by off.
func (f *fixture) promote(t *testing.T, gh *githubtest.Server, off time.Duration) promotion {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), prbotBinary(t), "promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging",
		"--github-url", gh.URL(), "-o", "json")
	cmd.Env = append(os.Environ(), offsetEnv(off), "GITHUB_TOKEN="+gh.Token(), "HOME="+f.dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("prbot promote at %s: %v\n%s%s", off, err, out.String(), errOut.String())
	}
	var p promotion
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("prbot promote -o json: %v\n%s", err, out.String())
	}
	return p
}

// leaseTransitions returns the Lease's spec.leaseTransitions (-1 when unreadable).
func (f *fixture) leaseTransitions(ctx context.Context, name string) int32 {
	l, err := f.env.Clientset.CoordinationV1().Leases(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.LeaseTransitions == nil {
		return -1
	}
	return *l.Spec.LeaseTransitions
}

// holderWatch records the successive holders of a Lease, read every 100 ms.
type holderWatch struct {
	mu  sync.Mutex
	seq []string
}

// watchHolders watches the leader Lease name until the test ends.
func (f *fixture) watchHolders(t *testing.T, name string) *holderWatch {
	t.Helper()
	w := &holderWatch{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			l, err := f.env.Clientset.CoordinationV1().Leases(f.ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				continue
			}
			w.mu.Lock()
			if len(w.seq) == 0 || w.seq[len(w.seq)-1] != *l.Spec.HolderIdentity {
				w.seq = append(w.seq, *l.Spec.HolderIdentity)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return w
}

// holders is the sequence of holders seen so far.
func (w *holderWatch) holders() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seq...)
}

// TestClockSkewPerEnvironment: with leaderElection.perEnvironment, replicas
// two hours ahead and behind share devel and prod; while both live no
// environment Lease changes hands, and when the holder of devel is killed
// the other takes devel within the lease duration and applies its next
// revision.
func TestClockSkewPerEnvironment(t *testing.T) {
	const n = 2
	files := manifest(n, "1.0.0")
	files["environments/prod/manifest.json"] = files["environments/devel/manifest.json"]
	f := newFixture(t, files)
	f.workloads(t, n)
	prodNS := f.env.Namespace(t)
	for i := range n {
		f.env.CreateDeployment(t, prodNS, svc(i), image(i, "1.0.0"))
	}
	f.config["environments"].(map[string]any)["prod"] = map[string]any{"lockPath": "apps/prod", "targets": []any{
		map[string]any{"name": "a", "namespace": prodNS},
	}}
	f.config["leaderElection"] = map[string]any{"perEnvironment": true}
	ctx := t.Context()
	replicas := map[string]*replica{
		"replica-a": f.start(t, "replica-a", nil, offsetEnv(skew)),
		"replica-b": f.start(t, "replica-b", nil, offsetEnv(-skew)),
	}
	envs := []string{"devel", "prod"}
	holders := func() map[string]string {
		m := map[string]string{}
		for _, env := range envs {
			l, err := f.env.Clientset.CoordinationV1().Leases(f.ns).Get(ctx, lease.EnvName(env), metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil {
				m[env] = *l.Spec.HolderIdentity
			}
		}
		return m
	}
	testenv.WaitFor(t, 60*time.Second, "devel and prod shared out, one each", func() bool {
		h := holders()
		return h["devel"] != "" && h["prod"] != "" && h["devel"] != h["prod"]
	})
	shared := holders()
	transitions := map[string]int32{}
	for _, env := range envs {
		transitions[env] = f.leaseTransitions(ctx, lease.EnvName(env))
	}
	// Two lease durations with both alive: nothing moves.
	for end := time.Now().Add(2 * leaseDuration); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if h := holders(); h["devel"] != shared["devel"] || h["prod"] != shared["prod"] {
			t.Fatalf("environment Leases moved while both replicas lived: %v, then %v", shared, h)
		}
	}
	for _, env := range envs {
		if tr := f.leaseTransitions(ctx, lease.EnvName(env)); tr != transitions[env] {
			t.Errorf("%s's Lease transitions went from %d to %d while both replicas lived", env, transitions[env], tr)
		}
	}

	victim := replicas[shared["devel"]]
	survivor := replicas[shared["prod"]]
	victim.kill(t)
	killed := time.Now()
	testenv.WaitFor(t, 30*time.Second, survivor.name+" holding devel", func() bool { return holders()["devel"] == survivor.name })
	takeover := time.Since(killed)
	if takeover > leaseDuration+2*retryPeriod+2*time.Second {
		t.Errorf("%s took devel %s after %s was killed, want within the lease duration %s", survivor.name, takeover.Round(100*time.Millisecond), victim.name, leaseDuration)
	}
	rev := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "devel to 2.0.0 after its holder died")
	f.applied(t, survivor, n, "2.0.0", rev, time.Minute)
	recovered := time.Since(killed)
	if tr := f.leaseTransitions(ctx, lease.EnvName("devel")); tr != transitions["devel"]+1 {
		t.Errorf("devel's Lease transitions = %d, want %d (one hand-over)", tr, transitions["devel"]+1)
	}
	if h := holders()["prod"]; h != survivor.name {
		t.Errorf("prod held by %q, want %s all along", h, survivor.name)
	}
	twice := 0
	counts := f.patches(t) // devel's namespace
	for i := range n {
		if c := counts[svc(i)]; c > 1 {
			twice++
			t.Errorf("%s in devel patched %d times for one plan", svc(i), c)
		}
	}
	table.add(t, row{fault: "7 replica clocks ±2 h apart, leaderElection.perEnvironment", survived: true, twice: twice, recover: recovered,
		note: fmt.Sprintf("no environment Lease moved while both lived; devel taken %.1f s after its holder (%s) was killed; seconds from the kill to devel's next revision applied", takeover.Seconds(), victim.name)})
}
