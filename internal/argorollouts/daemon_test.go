package argorollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// readToken is the API token the daemon tests read environments with.
const readToken = "argo-rollouts-read-token"

// daemonWorld is the reconciler's daemon as `reconciler run` builds it (one
// wire.Builder, daemon.PartsOf, leader election) on environment test, one
// target a in namespace ns, with its API served for a read-only token.
type daemonWorld struct {
	d    *daemon.Daemon
	api  *api.Client
	git  *gitserver.Server
	logs *testenv.Buffer
}

// runDaemon starts the daemon on environment test whose Rollouts setting is
// rollouts, with onFailedRollout: rollback and approvals as given; the
// manifests repository holds service api at tag "1" (what the cluster
// runs), so the first plan has nothing to change.
func runDaemon(t *testing.T, ns string, rollouts *config.Rollouts, approvals config.Approvals, skip bool, opts ...daemon.Option) *daemonWorld {
	t.Helper()
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{"environments/test/manifest.json": apiManifest("1", skip)}, "api 1")
	stateNS := env.Namespace(t)
	f := false
	cfg := &config.Config{
		Source: config.Source{URL: url, Branch: "main", Root: ".", Interval: config.Duration{Duration: time.Hour}},
		Environments: map[string]config.Environment{"test": {LockPath: "apps/test", OnFailedRollout: config.OnFailedRolloutRollback,
			Rollouts: rollouts, Approvals: approvals, Targets: []config.Target{{Name: "a", Namespace: ns}}}},
		Registry: config.Registry{VerifyDigests: &f, PinDigests: &f},
		Server:   config.Server{Listen: "127.0.0.1:0"},
		Locks:    config.Locks{Storage: "kubernetes", Namespace: stateNS},
		State:    config.State{Namespace: stateNS},
	}
	cfg.Default()
	cfg.Workloads.RolloutTimeout = config.Duration{Duration: 2 * time.Minute}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	id := daemon.DefaultIdentity()
	logs := &testenv.Buffer{}
	log := logs.Logger()
	b, err := wire.New(cfg, append(wire.DaemonOptions(id, log), wire.WithRESTConfig(env.Config),
		wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()), gitsource.WithJitter(0)))...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(cfg, append(append(parts, daemon.WithIdentity(id), daemon.WithLogger(log), daemon.WithLeaderElection(daemon.LeaderElection{Enable: true,
		ReleaseOnCancel: true, LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond})), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.WithTokens(auth.Token{Name: "reader", Token: readToken, Scopes: []string{"read"}}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(d, api.WithAuthenticator(authn))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client, err := api.NewClient("http://"+ln.Addr().String(), readToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeWhile(ctx, ln, d.Run) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the daemon did not stop within 30s")
		}
	})
	w := &daemonWorld{d: d, api: client, git: git, logs: logs}
	t.Cleanup(func() {
		if t.Failed() {
			v, err := d.Environment(context.Background(), "test")
			b, _ := json.Marshal(v)
			t.Logf("environment test: %s (%v)\ndaemon log:\n%s", b, err, logs.String())
		}
	})
	return w
}

// push commits service api at tag to the manifests and wakes the daemon.
func (w *daemonWorld) push(t *testing.T, tag string, skip bool) string {
	t.Helper()
	rev := w.git.Repo("manifests").Commit(t, "main", map[string]string{"environments/test/manifest.json": apiManifest(tag, skip)}, "api "+tag)
	w.d.Source().Trigger()
	return rev
}

// entryAt waits until the history's newest entry is of revision and returns it.
func (w *daemonWorld) entryAt(t *testing.T, revision string, timeout time.Duration) approval.Entry {
	t.Helper()
	var entry approval.Entry
	testenv.WaitFor(t, timeout, "the daemon to record the deploy of "+revision[:12], func() bool {
		h, err := w.d.History(context.Background(), "test")
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		if len(h) > 0 && h[0].Revision == revision {
			entry = h[0]
			return true
		}
		return false
	})
	return entry
}

// apiManifest is environment test's manifest: service api at tag.
func apiManifest(tag string, skip bool) string {
	return fmt.Sprintf(`{"skipConfirmation": %t, "services": [{"name": "api", "containers": [{"dockerName": "api", "dockerTag": %q}]}]}`, skip, tag)
}

// rolloutWrites lists the daemon's writes to the Rollouts of ns as the API
// server's audit log recorded them: "patch api", "patch api/status".
func rolloutWrites(t *testing.T, env *testenv.Env, ns string) []string {
	t.Helper()
	evs, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.UserAgent, wire.UserAgent) && ev.ObjectRef.Resource == "rollouts" && ev.ObjectRef.Namespace == ns {
			w := ev.Verb + " " + ev.ObjectRef.Name
			if ev.ObjectRef.Subresource != "" {
				w += "/" + ev.ObjectRef.Subresource
			}
			writes = append(writes, w)
		}
	}
	return writes
}

// TestDaemonRollsBackFailedAnalysisOnce: the daemon deploys api 2 to a
// canary Rollout whose analysis step fails; Argo Rollouts aborts it, the
// history records the deploy rolled back with Argo Rollouts' word on the
// failed metric, and with onFailedRollout: rollback the previous image is
// restored by exactly one patch: the daemon's writes to the Rollout are the
// deploy's patch and the restore's, nothing more (the audit log).
func TestDaemonRollsBackFailedAnalysisOnce(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	srv := newAnalysisServer(t, false)
	createTemplate(t, dyn, ns, "check", srv.URL)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, "+analysisStep+", {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")
	w := runDaemon(t, ns, &config.Rollouts{}, config.Approvals{}, true)

	rev := w.push(t, "2", true)
	entry := w.entryAt(t, rev, 3*time.Minute)
	if entry.Result != approval.ResultRolledBack || !strings.Contains(entry.Message, "Rollout/api failed: ") || !strings.Contains(entry.Message, `"ok"`) {
		t.Errorf("history entry %s: %q; want rolled back, Rollout/api failed naming the metric ok", entry.Result, entry.Message)
	}
	testenv.WaitFor(t, 2*time.Minute, "the Rollout to be Healthy at api:1 again", func() bool {
		image, phase, _ := rolloutOf(t, dyn, ns, "api")
		return image == "reg.example.com/api:1" && phase == "Healthy"
	})
	if diff := cmp.Diff([]string{"patch api", "patch api"}, rolloutWrites(t, env, ns)); diff != "" {
		t.Errorf("the daemon's writes to the namespace's Rollouts (-want +got):\n%s", diff)
	}
	if srv.asked.Load() == 0 {
		t.Error("the analysis never asked the test's server")
	}
}

// TestDaemonPromotesPausedCanary: under rollouts.promote: auto, a canary
// paused at a step is promoted by the daemon (kubectl argo rollouts
// promote's one status patch) and the deploy ends succeeded, with a Promoted
// Event on the Rollout naming both approvers of the plan. A promotion lost
// or left waiting would leave the Rollout paused until the rollout timeout
// and the entry failed.
func TestDaemonPromotesPausedCanary(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")
	w := runDaemon(t, ns, &config.Rollouts{Promote: config.RolloutsPromoteAuto}, config.Approvals{Required: 2}, false)

	rev := w.push(t, "2", false)
	hash := pendingHash(t, w.d, rev)
	for _, who := range []string{"github:alice", "github:bob"} {
		if _, err := w.d.Approve(context.Background(), "test", hash, identity.Principal{ID: identity.Parse(who)}); err != nil {
			t.Fatalf("approving as %s: %v", who, err)
		}
	}
	entry := w.entryAt(t, rev, 3*time.Minute)
	if entry.Result != approval.ResultSucceeded {
		t.Fatalf("history entry %s: %q; want succeeded", entry.Result, entry.Message)
	}
	if took := entry.Finished.Sub(entry.Started); took > time.Minute {
		t.Errorf("the deploy took %s: the promotion waited", took)
	}
	if image, phase, _ := rolloutOf(t, dyn, ns, "api"); image != "reg.example.com/api:2" || phase != "Healthy" {
		t.Errorf("Rollout after the deploy: %s %s, want reg.example.com/api:2 Healthy", image, phase)
	}
	evs := events(t, env.Clientset, ns, "api", "Promoted")
	if len(evs) != 1 || !strings.Contains(evs[0], "github:alice, github:bob") || !strings.Contains(evs[0], "paused at step 2 of 3") {
		t.Errorf("Promoted Events on the Rollout: %q; want one naming github:alice, github:bob and step 2 of 3", evs)
	}
	if diff := cmp.Diff([]string{"patch api", "patch api/status"}, rolloutWrites(t, env, ns)); diff != "" {
		t.Errorf("the daemon's writes to the namespace's Rollouts (-want +got):\n%s", diff)
	}
}

// TestDaemonShowsPausedStep: under rollouts.promote: wait, a canary paused
// at a step is shown where it waits, "Rollout api on a: paused at step 2 of
// 3: waiting for promotion", in the environment's status and over the API;
// a person's promotion (kubectl argo rollouts promote) lets the deploy end
// succeeded, and the daemon promoted nothing itself.
func TestDaemonShowsPausedStep(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	createRollout(t, dyn, ns, "api", "api", "reg.example.com/api:1", "[{setWeight: 50}, {pause: {}}, {setWeight: 100}]")
	waitPhase(t, dyn, ns, "api", "Healthy")
	w := runDaemon(t, ns, &config.Rollouts{Promote: config.RolloutsPromoteWait}, config.Approvals{}, true)

	rev := w.push(t, "2", true)
	const paused = "Rollout api on a: paused at step 2 of 3: waiting for promotion"
	testenv.WaitFor(t, 2*time.Minute, "the status to say where the Rollout waits", func() bool {
		v, err := w.d.Environment(context.Background(), "test")
		return err == nil && slices.Contains(v.Waiting, paused)
	})
	v, err := w.api.Environment(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(v.Waiting, paused) {
		t.Errorf("GET /api/v1/environments/test: waiting %q; want %q", v.Waiting, paused)
	}
	if v.Phase != "Applying" && v.Phase != "Verifying" {
		t.Errorf("phase %s while the Rollout waits; want Applying", v.Phase)
	}
	// A person promotes it, as `kubectl argo rollouts promote api` does.
	if _, err := dyn.Resource(reconcile.RolloutGVR).Namespace(ns).Patch(context.Background(), "api", types.MergePatchType,
		[]byte(`{"status":{"pauseConditions":null}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	entry := w.entryAt(t, rev, 2*time.Minute)
	if entry.Result != approval.ResultSucceeded {
		t.Errorf("history entry %s: %q; want succeeded", entry.Result, entry.Message)
	}
	if evs := events(t, env.Clientset, ns, "api", "Promoted"); len(evs) != 0 {
		t.Errorf("the daemon promoted under promote: wait: %q", evs)
	}
}

// TestDaemonRefusesAnalysisWithoutRollouts: pipeline.yaml asks for an
// analysis test after the deployment of an environment that does not set
// rollouts, so its targets read no Argo Rollouts resources: the daemon
// refuses the sequence as it plans, before anything is applied, with an
// error naming the file, the task and the key to set, in the environment's
// status; the Deployment keeps its image.
func TestDaemonRefusesAnalysisWithoutRollouts(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	env.CreateDeployment(t, ns, "api", "reg.example.com/api:1")
	v, err := verify.New()
	if err != nil {
		t.Fatal(err)
	}
	w := runDaemon(t, ns, nil, config.Approvals{}, true, daemon.WithVerifier(v))

	w.git.Repo("manifests").Commit(t, "main", map[string]string{
		"pipeline.yaml":                   "stages:\n- name: test\n  sequence:\n  - deployment\n  - name: test\n    properties: {analysis: {template: error-rate}}\n",
		"environments/test/manifest.json": apiManifest("2", true)}, "api 2, verified by an analysis")
	w.d.Source().Trigger()
	const want = "pipeline.yaml:5:5: stages[0].sequence[1].properties: analysis: target a of environment test reads no Argo Rollouts resources: " +
		"an analysis task needs environments.test.rollouts set in the reconciler's configuration"
	var got string
	testenv.WaitFor(t, time.Minute, "the status to refuse the sequence", func() bool {
		v, err := w.d.Environment(context.Background(), "test")
		if err == nil {
			got = v.Error
		}
		return strings.Contains(got, "analysis")
	})
	if !strings.Contains(got, want) {
		t.Errorf("the environment's error: %q; want it to contain %q", got, want)
	}
	if img := env.Image(t, ns, "api"); img != "reg.example.com/api:1" {
		t.Errorf("Deployment api runs %s; want reg.example.com/api:1, nothing applied", img)
	}
	if h, err := w.d.History(context.Background(), "test"); err != nil || len(h) != 0 {
		t.Errorf("history %+v (%v); want no deploy", h, err)
	}
}

// pendingHash waits until environment test's pending plan is at revision and
// returns its hash.
func pendingHash(t *testing.T, d *daemon.Daemon, revision string) string {
	t.Helper()
	var hash string
	testenv.WaitFor(t, time.Minute, "a plan pending at "+revision[:12], func() bool {
		v, err := d.Environment(context.Background(), "test")
		if err == nil && v.Pending != nil && v.Pending.Revision == revision {
			hash = v.Pending.PlanHash
		}
		return hash != ""
	})
	return hash
}
