package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
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
		wrote, err := e.w.Write(ctx, v, phaseOf(v), envresource.Term{Name: term, Holds: holds})
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
	if want := approval.ShortRevision(head) + " 0/1"; summary != want {
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
	if len(lines) != 3 || !strings.Contains(lines[2], approval.ShortRevision(head)+" 0/1") || !strings.HasPrefix(lines[1], "devel ") {
		t.Errorf("kubectl get environments:\n%s\nwant devel, then prod pending %s 0/1", out, approval.ShortRevision(head))
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
			r.d.workers[env].WakeUp()
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
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": `stages:
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

// withEvents gives e Events on the Environments, emitted to the test
// cluster by client-go's core/v1 recorder as `reconciler run` emits them;
// the options hook them to the daemon as its gate (beside Manual) and
// sequence listener.
func (e *envRes) withEvents(t testing.TB, h *harness) (*envresource.Events, record.EventRecorder, []Option) {
	t.Helper()
	eb := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 200, QPS: 1}))
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cluster.Env(t).Clientset.CoreV1().Events(h.stateNS)})
	t.Cleanup(eb.Shutdown)
	rec := eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: envresource.EventSource})
	ev := envresource.NewEvents(rec)
	specs := map[string]envresource.Spec{}
	for name, ec := range h.cfg.Environments {
		specs[name] = envresource.Spec{LockPath: ec.LockPath}
		for _, tg := range ec.Targets {
			s := specs[name]
			s.Targets = append(s.Targets, envresource.Target{Name: tg.Name, Namespace: tg.Namespace, Context: tg.Context})
			specs[name] = s
		}
	}
	w, err := envresource.New(dynamic.NewForConfigOrDie(cluster.Env(t).Config), h.stateNS, specs, envresource.WithEvents(ev))
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	return ev, rec, []Option{WithGate(approval.Gates(approval.Manual(), ev)), WithSequenceListener(ev)}
}

// environmentEvents lists the Events of env's Environment as `kubectl
// describe` finds them: by the object's name, kind and UID.
func environmentEvents(t testing.TB, h *harness, env string) []corev1.Event {
	t.Helper()
	o := envObject(t, h, env)
	sel := fields.Set{"involvedObject.name": env, "involvedObject.kind": "Environment", "involvedObject.uid": string(o.GetUID())}.AsSelector().String()
	list, err := cluster.Env(t).Clientset.CoreV1().Events(h.stateNS).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(list.Items, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	return list.Items
}

// reasonsOf are the reasons of evs, each once, in order of first sight.
func reasonsOf(evs []corev1.Event) []string {
	var out []string
	for _, e := range evs {
		if !slices.Contains(out, e.Reason) {
			out = append(out, e.Reason)
		}
	}
	return out
}

// findEvent is the Event of evs with reason whose message holds all of parts.
func findEvent(evs []corev1.Event, reason string, parts ...string) *corev1.Event {
	for i, e := range evs {
		if e.Reason != reason {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e.Message, p)
		}
		if ok {
			return &evs[i]
		}
	}
	return nil
}

// TestEnvironmentResourceEvents: the Environments' Events tell the story:
// devel deploys on its own (ApplyStarted, Applied); prod's plan is proposed,
// approved by alice and applied; its next plan is rejected by bob; a lock is
// placed and lifted. `kubectl describe` shows them; ten idle passes, each
// proposing a pending plan again, add none (nor count any again).
func TestEnvironmentResourceEvents(t *testing.T) {
	h := newHarness(t)
	e := newEnvRes(t, h)
	_, rec, opts := e.withEvents(t, h)
	// Every pass proposes a plan still pending again, as a new process does.
	r := h.start(append(opts, e.option(), WithRepropose(time.Millisecond))...)
	e.d.Store(r.d)
	head := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", head)
	waitCondition(t, h, "devel", envresource.ConditionDeployed, metav1.ConditionTrue)

	waitEvents := func(env string, want ...[]string) []corev1.Event {
		t.Helper()
		var evs []corev1.Event
		defer func() {
			if t.Failed() {
				for _, e := range evs {
					t.Logf("%s Event %s %s: %s", env, e.Type, e.Reason, e.Message)
				}
			}
		}()
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%s's Events %v", env, want), func() bool {
			evs = environmentEvents(t, h, env)
			for _, w := range want {
				if findEvent(evs, w[0], w[1:]...) == nil {
					return false
				}
			}
			return true
		})
		return evs
	}
	waitEvents("devel", []string{envresource.ReasonApplyStarted, approval.ShortRevision(head), "web → 1.0.0"}, []string{envresource.ReasonApplied, approval.ShortRevision(head), "web → 1.0.0"})
	waitEvents("prod", []string{envresource.ReasonPlanProposed, approval.ShortRevision(head), shortHash(p.PlanHash), "web → 1.0.0"})

	code, body := r.call(t, "POST", "/api/v1/environments/prod/approve", tokenOf("alice"), map[string]any{"planHash": p.PlanHash})
	if code != http.StatusAccepted {
		t.Fatalf("approve prod: %d %s", code, body)
	}
	waitEvents("prod", []string{envresource.ReasonApproved, "token:alice", shortHash(p.PlanHash)}, []string{envresource.ReasonApplied, approval.ShortRevision(head), "token:alice"})

	next := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	r.push(t, h, "events-next")
	q := r.waitPending(t, "prod", next)
	code, body = r.call(t, "POST", "/api/v1/environments/prod/reject", tokenOf("bob"), map[string]any{"planHash": q.PlanHash, "reason": "not today"})
	if code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("reject prod: %d %s", code, body)
	}
	evs := waitEvents("prod", []string{envresource.ReasonPlanProposed, approval.ShortRevision(next), "web → 1.1.0"}, []string{envresource.ReasonRejected, "token:bob", "not today", approval.ShortRevision(next)})
	if r := findEvent(evs, envresource.ReasonRejected); r.Type != corev1.EventTypeWarning || r.Source.Component != envresource.EventSource {
		t.Errorf("Rejected Event of type %s from %q, want Warning from %s", r.Type, r.Source.Component, envresource.EventSource)
	}

	ctx := context.Background()
	now := time.Now()
	if _, err := r.d.lockSvc.Lock(ctx, lock.Lock{Path: "apps/prod", Type: lock.Freeze, Author: "github:carol", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "prod locked", func() bool {
		r.d.workers["prod"].WakeUp()
		return len(r.environment(t, "prod").Locks) == 1
	})
	waitCondition(t, h, "prod", envresource.ConditionLocked, metav1.ConditionTrue)
	waitEvents("prod", []string{envresource.ReasonLocked, "apps/prod", "github:carol"})
	if _, err := r.d.lockSvc.Unlock(ctx, "apps/prod", lock.Freeze, false); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "prod unlocked", func() bool {
		r.d.workers["prod"].WakeUp()
		return len(r.environment(t, "prod").Locks) == 0
	})
	waitCondition(t, h, "prod", envresource.ConditionLocked, metav1.ConditionFalse)
	evs = waitEvents("prod", []string{envresource.ReasonUnlocked})
	if diff := cmp.Diff([]string{envresource.ReasonPlanProposed, envresource.ReasonApproved, envresource.ReasonApplyStarted, envresource.ReasonApplied,
		envresource.ReasonRejected, envresource.ReasonLocked, envresource.ReasonUnlocked}, reasonsOf(evs)); diff != "" {
		t.Errorf("prod's Events (-want +got):\n%s", diff)
	}

	// `kubectl describe` finds them the same way.
	out, err := kubectl(t, "describe", "environment", "prod", "-n", h.stateNS)
	if err != nil {
		t.Fatalf("kubectl describe: %v\n%s", err, out)
	}
	_, section, _ := strings.Cut(out, "\nEvents:")
	for _, reason := range []string{envresource.ReasonPlanProposed, envresource.ReasonApproved, envresource.ReasonApplied, envresource.ReasonRejected, envresource.ReasonLocked} {
		if !strings.Contains(section, reason) {
			t.Errorf("kubectl describe environment prod: no %s in its Events:\n%s", reason, out)
		}
	}

	// Ten idle passes of both environments, a plan pending in prod (proposed
	// again at each): no Event, none counted again.
	third := h.commit("prod", false, map[string]string{"web": "1.2.0"})
	r.push(t, h, "events-third")
	r.waitPending(t, "prod", third)
	waitEvents("prod", []string{envresource.ReasonPlanProposed, approval.ShortRevision(third), "web → 1.2.0"})
	seen := func() map[string]int32 {
		m := map[string]int32{}
		for _, env := range []string{"devel", "prod"} {
			for _, e := range environmentEvents(t, h, env) {
				m[e.Name] = e.Count
			}
		}
		return m
	}
	before := seen()
	for i := range 10 {
		calls := e.calls.Load()
		for _, env := range []string{"devel", "prod"} {
			r.d.workers[env].WakeUp()
		}
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("idle pass %d of both environments", i+1), func() bool { return e.calls.Load() >= calls+2 })
	}
	// The recorder writes in order: once a marker is there, so is anything
	// the passes would have emitted before it.
	rec.Event(objectRefOf(envObject(t, h, "prod")), corev1.EventTypeNormal, "TestMarker", "after ten idle passes")
	testenv.WaitFor(t, 30*time.Second, "the marker Event", func() bool { return findEvent(environmentEvents(t, h, "prod"), "TestMarker") != nil })
	after := seen()
	delete(after, findEvent(environmentEvents(t, h, "prod"), "TestMarker").Name)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("Events after ten idle passes (-before +after):\n%s", diff)
	}
}

// objectRefOf is the reference of an object's Events.
func objectRefOf(o *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}
}

// shortHash is how Events name a planHash: its algorithm and twelve digits.
func shortHash(h string) string {
	alg, digest, _ := strings.Cut(h, ":")
	return alg + ":" + approval.ShortRevision(digest)
}
