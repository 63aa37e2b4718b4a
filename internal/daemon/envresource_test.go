package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// envRes is an Environment writer hooked to a daemon as `reconciler run`
// hooks it (internal/cli): after each pass and decision.
type envRes struct {
	t     testing.TB
	w     *envresource.Writer
	d     atomic.Pointer[Daemon]
	calls atomic.Int64
	mu    sync.Mutex
	wrote map[string]int // environment → writes made by this replica
}

func newEnvRes(t testing.TB, h *harness) *envRes {
	t.Helper()
	specs := map[string]envresource.Spec{}
	for name, ec := range h.cfg.Environments {
		s := envresource.Spec{LockPath: ec.LockPath}
		for _, tg := range ec.Targets {
			s.Targets = append(s.Targets, envresource.Target{Name: tg.Name, Namespace: tg.Namespace, Context: tg.Context})
		}
		specs[name] = s
	}
	w, err := envresource.New(dynamic.NewForConfigOrDie(cluster.Env(t).Config), h.stateNS, specs)
	if err != nil {
		t.Fatal(err)
	}
	return &envRes{t: t, w: w, wrote: map[string]int{}}
}

// option hooks e to the daemon it is given to (e.bind after New).
func (e *envRes) option() Option {
	return WithRecordHook(func(ctx context.Context, env, term string, holds func(context.Context) error) {
		defer e.calls.Add(1)
		d := e.d.Load()
		if d == nil {
			return
		}
		v, err := d.Environment(ctx, env)
		if err != nil {
			e.t.Logf("reading environment %s: %v", env, err)
			return
		}
		wrote, err := e.w.Write(ctx, v, phaseOf(v), term, holds)
		if err != nil && ctx.Err() == nil {
			e.t.Logf("writing Environment %s: %v", env, err)
		}
		if wrote {
			e.mu.Lock()
			e.wrote[env]++
			e.mu.Unlock()
		}
	})
}

// envObject reads the Environment env of h.
func envObject(t testing.TB, h *harness, env string) *unstructured.Unstructured {
	t.Helper()
	o, err := getEnvObject(t, h, env)
	if err != nil {
		t.Fatalf("reading Environment %s: %v", env, err)
	}
	return o
}

func getEnvObject(t testing.TB, h *harness, env string) (*unstructured.Unstructured, error) {
	return dynamic.NewForConfigOrDie(cluster.Env(t).Config).Resource(envresource.GVR).Namespace(h.stateNS).Get(context.Background(), env, metav1.GetOptions{})
}

// waitCondition waits until env's Environment has condition typ with status want.
func waitCondition(t testing.TB, h *harness, env, typ string, want metav1.ConditionStatus) *unstructured.Unstructured {
	t.Helper()
	var o *unstructured.Unstructured
	testenv.WaitFor(t, 60*time.Second, env+" "+typ+"="+string(want), func() bool {
		var err error
		if o, err = getEnvObject(t, h, env); err != nil {
			return false
		}
		c := condition(o, typ)
		return c != nil && c.Status == want
	})
	return o
}

// condition is the condition typ of obj (nil when it has none).
func condition(obj *unstructured.Unstructured, typ string) *metav1.Condition {
	var st envresource.Status
	raw, _ := json.Marshal(obj.Object["status"])
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil
	}
	for _, c := range st.Conditions {
		if c.Type == typ {
			return &c
		}
	}
	return nil
}

// environmentWrites counts the audit log's writes to h's Environments.
func environmentWrites(t testing.TB, h *harness) int {
	t.Helper()
	evs, err := cluster.Env(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.ObjectRef.Resource == "environments" && ev.ObjectRef.Namespace == h.stateNS {
			n++
		}
	}
	return n
}

// kubectl runs the real kubectl against the test cluster.
func kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	var out bytes.Buffer
	cmd := exec.Command(path, append([]string{"--kubeconfig", cluster.Env(t).Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// TestEnvironmentResource: the reconciler creates an Environment per
// environment whose status follows the daemon: devel (skipConfirmation)
// Deployed at the head, prod AwaitingApproval; `kubectl get environments`
// shows the columns; `kubectl wait --for=condition=Deployed` returns for
// devel and times out for prod; an idle daemon writes no Environment over
// ten passes (the API server's audit log).
func TestEnvironmentResource(t *testing.T) {
	h := newHarness(t)
	e := newEnvRes(t, h)
	r := h.start(e.option())
	e.d.Store(r.d)
	head := h.git.Head(t, "manifests", "main")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	r.waitPending(t, "prod", head)

	waitCondition(t, h, "devel", envresource.ConditionDeployed, metav1.ConditionTrue)
	waitCondition(t, h, "prod", envresource.ConditionAwaitingApproval, metav1.ConditionTrue)
	devel := envObject(t, h, "devel")
	if got := devel.GetLabels()[envresource.ManagedByLabel]; got != "stagehand" {
		t.Errorf("devel's %s label = %q, want stagehand", envresource.ManagedByLabel, got)
	}
	if rev, _, _ := unstructured.NestedString(devel.Object, "status", "observedRevision"); rev != head {
		t.Errorf("devel observedRevision = %q, want %s", rev, head)
	}
	prod := envObject(t, h, "prod")
	summary, _, _ := unstructured.NestedString(prod.Object, "status", "pending", "summary")
	if want := short(head) + " 0/1"; summary != want {
		t.Errorf("prod's pending summary = %q, want %q", summary, want)
	}
	if c := condition(prod, envresource.ConditionDeployed); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "AwaitingApproval" || c.ObservedGeneration != prod.GetGeneration() {
		t.Errorf("prod's Deployed = %+v, want False, AwaitingApproval, observedGeneration %d", c, prod.GetGeneration())
	}

	out, err := kubectl(t, "get", "environments", "-n", h.stateNS)
	if err != nil {
		t.Fatalf("kubectl get environments: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if diff := cmp.Diff([]string{"NAME", "REVISION", "PHASE", "PENDING", "LOCKED", "LAST", "DEPLOY", "AGE"}, strings.Fields(lines[0])); diff != "" {
		t.Errorf("kubectl get environments columns (-want +got):\n%s\n%s", diff, out)
	}
	if len(lines) != 3 || !strings.Contains(lines[2], short(head)+" 0/1") || !strings.HasPrefix(lines[1], "devel ") {
		t.Errorf("kubectl get environments:\n%s\nwant devel, then prod pending %s 0/1", out, short(head))
	}
	if out, err := kubectl(t, "wait", "-n", h.stateNS, "--for=condition=Deployed", "environment/devel", "--timeout=30s"); err != nil {
		t.Errorf("kubectl wait for devel: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "wait", "-n", h.stateNS, "--for=condition=Deployed", "env/prod", "--timeout=2s"); err == nil || !strings.Contains(out, "timed out") {
		t.Errorf("kubectl wait for prod, awaiting approval: %v\n%s; want a time-out", err, out)
	}

	// Idle: ten passes over both environments, no write.
	before, writesBefore := environmentWrites(t, h), e.w.Writes()
	for i := range 10 {
		calls := e.calls.Load()
		for _, env := range []string{"devel", "prod"} {
			r.d.workers[env].wakeUp()
		}
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("pass %d of both environments", i+1), func() bool { return e.calls.Load() >= calls+2 })
	}
	if got := environmentWrites(t, h) - before; got != 0 || e.w.Writes() != writesBefore {
		t.Errorf("ten idle passes wrote Environments %d times (audit log), writer counted %d; want 0", got, e.w.Writes()-writesBefore)
	}
	t.Logf("Environment writes over ten idle passes of two environments: %d", environmentWrites(t, h)-before)

	// Prod approved: Deployed at the head, and `kubectl wait` returns.
	code, body := r.call(t, "POST", "/api/v1/environments/prod/approve", tokenOf("alice"), map[string]any{"planHash": r.environment(t, "prod").Pending.PlanHash})
	if code != http.StatusAccepted {
		t.Fatalf("approve prod: %d %s", code, body)
	}
	if out, err := kubectl(t, "wait", "-n", h.stateNS, "--for=condition=Deployed", "environment/prod", "--timeout=60s"); err != nil {
		t.Errorf("kubectl wait for prod, approved: %v\n%s", err, out)
	}
	prod = envObject(t, h, "prod")
	if res, _, _ := unstructured.NestedString(prod.Object, "status", "lastDeploy", "result"); res != "succeeded" {
		t.Errorf("prod lastDeploy.result = %q, want succeeded", res)
	}
	if c := condition(prod, envresource.ConditionAwaitingApproval); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("prod AwaitingApproval after the deploy = %+v, want False", c)
	}
}

// phaseOf is the phase the daemon keeps for v.
func phaseOf(v *status.Environment) status.Phase { return v.Phase }

// TestEnvironmentResourceHolderWrites: with a Lease per environment and two
// replicas, each Environment is written only by the replica holding its
// environment, and its status names that holder.
func TestEnvironmentResourceHolderWrites(t *testing.T) {
	h := newHarness(t, "devel", "qa")
	h.cfg.LeaderElection.PerEnvironment = true
	h.cfg.Source.Interval = config.Duration{Duration: 10 * time.Minute}
	var rs []*running
	var es []*envRes
	for i := range 2 {
		e := newEnvRes(t, h)
		r := h.start(WithIdentity(fmt.Sprintf("replica-%d", i)), WithLeaderElection(shardElection()), e.option())
		e.d.Store(r.d)
		rs, es = append(rs, r), append(es, e)
	}
	waitHeld(t, rs, 2)
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	waitCondition(t, h, "devel", envresource.ConditionDeployed, metav1.ConditionTrue)
	waitCondition(t, h, "qa", envresource.ConditionAwaitingApproval, metav1.ConditionTrue)
	for _, env := range []string{"devel", "qa"} {
		holder := holderOfEnv(rs, env)
		testenv.WaitFor(t, 30*time.Second, env+"'s Environment to name its holder", func() bool {
			got, _, _ := unstructured.NestedString(envObject(t, h, env).Object, "status", "holder")
			return got == rs[holder].d.o.identity
		})
		for i, e := range es {
			e.mu.Lock()
			n := e.wrote[env]
			e.mu.Unlock()
			if i == holder && n == 0 {
				t.Errorf("replica-%d holds %s and wrote its Environment %d times, want some", i, env, n)
			}
			if i != holder && n != 0 {
				t.Errorf("replica-%d does not hold %s and wrote its Environment %d times, want 0", i, env, n)
			}
		}
	}
}

// TestEnvironmentResourceAfterHandover: a plan approved on a replica that
// does not lead is handed over, and once the leader has applied it the
// Environment shows it deployed without waiting for the next pass (the
// resync here is an hour away): the record hook is called after a decision
// handed over as after one taken by the leader itself.
func TestEnvironmentResourceAfterHandover(t *testing.T) {
	h := newHarness(t, "prod")
	e := newEnvRes(t, h)
	r := h.start(e.option())
	e.d.Store(r.d)
	head := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", head)
	waitCondition(t, h, "prod", envresource.ConditionAwaitingApproval, metav1.ConditionTrue)

	standby, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := standby.Approve(context.Background(), "prod", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatalf("approving on the standby: %v", err)
	}
	testenv.WaitFor(t, 30*time.Second, "the leader's apply of the decision handed over recorded", func() bool { return len(r.history(t, "prod")) == 1 })
	o := waitCondition(t, h, "prod", envresource.ConditionDeployed, metav1.ConditionTrue)
	if got, _, _ := unstructured.NestedStringSlice(o.Object, "status", "lastDeploy", "approvers"); !cmp.Equal(got, []string{"github:alice"}) {
		t.Errorf("prod's lastDeploy.approvers = %q, want [github:alice]", got)
	}
}

// TestEnvironmentResourcePhases: the Environment follows the phase during
// a pass, not only at its end: Applying while the patched Deployment's
// rollout waits (its pods cannot be scheduled), then Verifying while the
// sequence's test task runs, then Deployed once it passed.
func TestEnvironmentResourcePhases(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t, "devel")
	h.git.Commit(t, "manifests", "main", map[string]string{"pipeline.yaml": `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties: {kind: http, url: "http://web/healthz"}
`}, "sequence")
	deps := env.Clientset.AppsV1().Deployments(h.ns["devel"])
	unschedulable := func(on bool) {
		t.Helper()
		patch := `{"spec":{"template":{"spec":{"nodeSelector":null}}}}`
		if on {
			patch = `{"spec":{"template":{"spec":{"nodeSelector":{"stagehand.io/no-such-node":"true"}}}}}`
		}
		if _, err := deps.Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unschedulable(true)
	release := make(chan struct{})
	var testRan atomic.Bool
	test := func(ctx context.Context, _ sequence.Request) (sequence.Result, error) {
		testRan.Store(true)
		select {
		case <-release:
			return sequence.Result{Result: promote.ResultPass, Message: "healthy"}, nil
		case <-ctx.Done():
			return sequence.Result{}, ctx.Err()
		}
	}
	e := newEnvRes(t, h)
	r := h.start(e.option(), WithTask(promote.TaskTest, test))
	e.d.Store(r.d)
	phase := func() string {
		o, err := getEnvObject(t, h, "devel")
		if err != nil {
			return ""
		}
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return p
	}

	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "devel's Environment in phase Applying while its rollout waits", func() bool { return phase() == string(status.PhaseApplying) })
	if c := condition(envObject(t, h, "devel"), envresource.ConditionDeployed); c == nil || c.Reason != "Applying" {
		t.Errorf("devel's Deployed condition while applying = %+v, want False/Applying", c)
	}

	unschedulable(false) // the rollout finishes: the test task runs, and waits
	testenv.WaitFor(t, 60*time.Second, "devel's Environment in phase Verifying while its test runs", func() bool { return testRan.Load() && phase() == string(status.PhaseVerifying) })
	if c := condition(envObject(t, h, "devel"), envresource.ConditionDeployed); c == nil || c.Reason != "Verifying" {
		t.Errorf("devel's Deployed condition while verifying = %+v, want False/Verifying", c)
	}

	close(release)
	waitCondition(t, h, "devel", envresource.ConditionDeployed, metav1.ConditionTrue)
	if p := phase(); p != string(status.PhaseIdle) {
		t.Errorf("devel's phase once deployed = %q, want Idle", p)
	}
}
