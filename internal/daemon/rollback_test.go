package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// rollbackWorld is a devel environment (skipConfirmation) whose Deployment
// web runs web:1.0.0 applied by the daemon, with the given onFailedRollout,
// a short rollout timeout and resync, a gate that records what it hears, a
// rollback hook that records its calls, and a count of the PATCH requests
// sent to Deployment web.
type rollbackWorld struct {
	h       *harness
	r       *running
	ns      string
	patches atomic.Int64
	gate    *heardGate
	hook    *hookCalls
	opts    []Option
	wopts   []wire.Option
}

// heardGate is a Gate that records Completed outcomes.
type heardGate struct {
	mu        sync.Mutex
	completed []approval.Outcome
}

func (g *heardGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, nil
}
func (g *heardGate) Superseded(context.Context, approval.Proposal, string) error { return nil }
func (g *heardGate) Completed(_ context.Context, _ approval.Proposal, o approval.Outcome) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.completed = append(g.completed, o)
	return nil
}

func (g *heardGate) results() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, o := range g.completed {
		out = append(out, o.Result)
	}
	return out
}

type hookCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *hookCalls) hook(_ context.Context, env string, id int64, cause string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s %d %s", env, id, cause))
	return nil
}

func (c *hookCalls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func newRollbackWorld(t *testing.T, onFailed string) *rollbackWorld {
	t.Helper()
	w := &rollbackWorld{h: newHarness(t, "devel"), gate: &heardGate{}, hook: &hookCalls{}}
	w.ns = w.h.ns["devel"]
	ec := w.h.cfg.Environments["devel"]
	ec.OnFailedRollout = onFailed
	w.h.cfg.Environments["devel"] = ec
	w.h.cfg.Workloads.RolloutTimeout = config.Duration{Duration: 4 * time.Second}
	cfg := rest.CopyConfig(cluster.Env(t).Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/namespaces/"+w.ns+"/deployments/web") {
				w.patches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	w.wopts = []wire.Option{wire.WithRESTConfig(cfg)}
	w.opts = []Option{WithGate(w.gate), WithResync(200 * time.Millisecond), WithRollbackHook(w.hook.hook)}
	w.r = w.h.startWith(w.wopts, w.opts...)
	waitImage(t, w.ns, "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "the first apply recorded", func() bool { return len(w.history(t)) == 1 })
	return w
}

// history reads devel's history from the Store (the API would rate-limit a
// tight wait).
func (w *rollbackWorld) history(t *testing.T) []approval.Entry {
	t.Helper()
	h, err := w.r.d.History(context.Background(), "devel")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// blockNewPods makes every new pod of the namespace fail to be created: a
// quota of one pod, with its usage (the one pod running) written by the test,
// as the control plane runs no quota controller. A rollout of a new image
// never progresses, while the old ReplicaSet keeps its ready pod.
func (w *rollbackWorld) blockNewPods(t *testing.T) {
	t.Helper()
	c := cluster.Env(t).Clientset
	testenv.WaitFor(t, 30*time.Second, "web's pod ready, before new pods are refused", func() bool {
		d, err := c.AppsV1().Deployments(w.ns).Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1 && d.Status.Replicas == 1
	})
	one := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "one-pod"}, Spec: corev1.ResourceQuotaSpec{Hard: one}}
	q, err := c.CoreV1().ResourceQuotas(w.ns).Create(context.Background(), q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: one, Used: one}
	if _, err := c.CoreV1().ResourceQuotas(w.ns).UpdateStatus(context.Background(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (w *rollbackWorld) allowNewPods(t *testing.T) {
	t.Helper()
	if err := cluster.Env(t).Clientset.CoreV1().ResourceQuotas(w.ns).Delete(context.Background(), "one-pod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// passes counts the passes over devel so far.
func (w *rollbackWorld) passes(t *testing.T) uint64 { return passesOf(t, w.r, "devel") }

// passesOf counts the passes r made over env so far.
func passesOf(t *testing.T, r *running, env string) uint64 {
	t.Helper()
	return testenv.Observations(t, r.d.Metrics().Registry, testenv.Series{Name: "stagehand_reconcile_duration_seconds", Label: "environment", Value: env})
}

// waitPasses waits for n more passes over devel.
func (w *rollbackWorld) waitPasses(t *testing.T, n uint64) {
	t.Helper()
	from := w.passes(t)
	testenv.WaitFor(t, 30*time.Second, "more passes over devel", func() bool { return w.passes(t) >= from+n })
}

// TestRollbackOfAFailedRollout: with onFailedRollout: rollback, a rollout
// that cannot progress is undone: the Deployment runs the image before it
// again (one patch there, one back), the history has a rolled-back entry
// with the cause and the manifest, the gate hears rolled-back, the hook is
// called once and the workload has a RolledBack Event; over resyncs and a
// restart the failed revision is not applied again; a new revision is.
func TestRollbackOfAFailedRollout(t *testing.T) {
	w := newRollbackWorld(t, config.OnFailedRolloutRollback)
	ctx := context.Background()
	w.blockNewPods(t)
	before := w.patches.Load()
	rev := w.h.commit("devel", true, map[string]string{"web": "2.0.0"})
	w.r.push(t, w.h, "failing")

	var hist []approval.Entry
	testenv.WaitFor(t, 60*time.Second, "the rolled-back entry", func() bool {
		hist = w.history(t)
		return len(hist) == 2
	})
	e := w.r.entry(t, "devel", hist[0].ID)
	if e.ID != 2 || e.Result != approval.ResultRolledBack || e.Revision != rev ||
		!strings.Contains(e.Message, "rollout failed: 1 workload(s) not deployed") ||
		!strings.Contains(e.Message, "rolled back 1 workload(s) to the images before") {
		t.Errorf("rolled-back entry = %d %s %s: %s", e.ID, e.Result, approval.ShortRevision(e.Revision), e.Message)
	}
	if e.Manifest == nil || e.Manifest.Services[0].Containers[0].DockerTag != "2.0.0" {
		t.Errorf("rolled-back entry's manifest = %+v; want the failed revision's", e.Manifest)
	}
	if got := cluster.Env(t).Image(t, w.ns, "web"); got != imageRepo+"web:1.0.0" {
		t.Errorf("web runs %s after the rollback; want web:1.0.0", got)
	}
	if n := w.patches.Load() - before; n != 2 {
		t.Errorf("%d patches of web; want 2 (the apply, the rollback)", n)
	}
	if got := w.gate.results(); len(got) != 2 || got[1] != approval.ResultRolledBack {
		t.Errorf("gate heard %v; want succeeded, rolled-back", got)
	}
	w.gate.mu.Lock()
	if o := w.gate.completed[len(w.gate.completed)-1]; o.Apply == nil || !o.Apply.Failed() || o.Message != e.Message {
		t.Errorf("gate's outcome = %+v; want the failed apply's workloads and the rollback message", o)
	}
	w.gate.mu.Unlock()
	if calls := w.hook.get(); len(calls) != 1 || !strings.HasPrefix(calls[0], "devel 2 rollout failed: ") {
		t.Errorf("rollback hook calls = %q; want one, for devel entry 2", calls)
	}
	events, err := cluster.Env(t).Clientset.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=RolledBack"})
	if err != nil || len(events.Items) != 1 || !strings.Contains(events.Items[0].Message, "web:2.0.0 → "+imageRepo+"web:1.0.0") {
		t.Errorf("RolledBack events = %+v, %v; want one from 2.0.0 to 1.0.0", events, err)
	}
	if v := w.r.environment(t, "devel"); v.RolledBack == nil || v.RolledBack.Revision != rev || v.RolledBack.EntryID != 2 ||
		!strings.HasPrefix(v.RolledBack.Cause, "rollout failed: ") || v.Phase != status.PhaseFailed {
		t.Errorf("the environment's rolledBack = %+v, phase %q; want revision %s, entry 2 and the cause, Failed", v.RolledBack, v.Phase, approval.ShortRevision(rev))
	}
	st, err := w.r.d.Store().Load(ctx, "devel")
	if err != nil || st.Failed == nil || st.Failed.Revision != rev || st.Failed.EntryID != 2 || st.Rollback != nil || st.InFlight != nil {
		t.Fatalf("state after the rollback: failed %+v, rollback %+v, in flight %+v, %v", st.Failed, st.Rollback, st.InFlight, err)
	}

	// Not applied again: over resyncs, and after a restart.
	w.waitPasses(t, 3)
	w.r.stop()
	w.r = w.h.startWith(w.wopts, w.opts...)
	w.waitPasses(t, 3)
	if n := w.patches.Load() - before; n != 2 {
		t.Errorf("%d patches of web after resyncs and a restart; want still 2", n)
	}
	if h := w.history(t); len(h) != 2 {
		t.Errorf("history has %d entries after resyncs; want 2", len(h))
	}
	if got := cluster.Env(t).Image(t, w.ns, "web"); got != imageRepo+"web:1.0.0" {
		t.Errorf("web runs %s after resyncs; want web:1.0.0", got)
	}

	// A new revision is applied as usual.
	w.allowNewPods(t)
	w.h.commit("devel", true, map[string]string{"web": "3.0.0"})
	w.r.push(t, w.h, "fixed")
	waitImage(t, w.ns, "web", imageRepo+"web:3.0.0")
	testenv.WaitFor(t, 30*time.Second, "the new revision's entry", func() bool {
		hist = w.history(t)
		return len(hist) == 3
	})
	if hist[0].Result != approval.ResultSucceeded || hist[0].ID != 3 {
		t.Errorf("newest entry = %d %s: %s", hist[0].ID, hist[0].Result, hist[0].Message)
	}
	if v := w.r.environment(t, "devel"); v.Phase != status.PhaseIdle {
		t.Errorf("phase after the new revision's apply = %q, want Idle", v.Phase)
	}
}

// TestStayAfterAFailedRollout: by default a failed rollout stays: the
// workload keeps the new image, the entry is failed, nothing is rolled back.
func TestStayAfterAFailedRollout(t *testing.T) {
	w := newRollbackWorld(t, "")
	w.blockNewPods(t)
	before := w.patches.Load()
	w.h.commit("devel", true, map[string]string{"web": "2.0.0"})
	w.r.push(t, w.h, "failing")
	var hist []approval.Entry
	testenv.WaitFor(t, 60*time.Second, "the failed entry", func() bool { hist = w.history(t); return len(hist) == 2 })
	if hist[0].Result != approval.ResultFailed {
		t.Errorf("entry = %s: %s; want failed", hist[0].Result, hist[0].Message)
	}
	w.waitPasses(t, 3)
	if got := cluster.Env(t).Image(t, w.ns, "web"); got != imageRepo+"web:2.0.0" {
		t.Errorf("web runs %s; want web:2.0.0 left as it is", got)
	}
	if n := w.patches.Load() - before; n != 1 {
		t.Errorf("%d patches of web; want 1", n)
	}
	if calls := w.hook.get(); len(calls) != 0 {
		t.Errorf("rollback hook called: %q", calls)
	}
}

// TestRollbackContinuesAfterARestart: a rollback recorded in the state but
// not finished (the leader died after the apply failed) is continued by the
// next leader before anything else: web is put back once, the entry is
// recorded once, and the failed revision is not applied.
func TestRollbackContinuesAfterARestart(t *testing.T) {
	w := newRollbackWorld(t, config.OnFailedRolloutRollback)
	ctx := context.Background()
	w.r.stop()
	c := cluster.Env(t).Clientset
	// What the dead leader left: web patched to 2.0.0 (its rollout failed),
	// the rollback recorded and not started.
	rev := w.h.commit("devel", true, map[string]string{"web": "2.0.0"})
	body := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"` + imageRepo + `web:2.0.0"}]}}}}`
	if _, err := c.AppsV1().Deployments(w.ns).Patch(ctx, "web", "application/strategic-merge-patch+json", []byte(body), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	ch := reconcile.Change{Service: "web", Target: "a", Namespace: w.ns, Kind: reconcile.KindDeployment, Name: "web", Container: "web",
		From: imageRepo + "web:1.0.0", To: imageRepo + "web:2.0.0"}
	changes, _ := json.Marshal([]reconcile.Change{ch})
	now := time.Now().UTC()
	e := approval.Entry{Revision: rev, PlanHash: "sha256:failed", Changes: changes, Approver: approval.AutoApprover,
		Result: approval.ResultFailed, Message: "1 workload(s) not deployed", Started: now, Finished: now}
	if err := w.r.d.Store().Update(ctx, "devel", func(st *state.EnvState) {
		st.Rollback = &state.Rollback{Entry: e, Cause: "rollout failed: web stuck", At: now}
	}); err != nil {
		t.Fatal(err)
	}
	before := w.patches.Load()
	w.r = w.h.startWith(w.wopts, w.opts...)
	waitImage(t, w.ns, "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the rolled-back entry", func() bool { hist = w.history(t); return len(hist) == 2 })
	w.waitPasses(t, 3)
	if hist[0].Result != approval.ResultRolledBack || hist[0].Revision != rev || !strings.HasPrefix(hist[0].Message, "rollout failed: web stuck; rolled back 1 workload(s)") {
		t.Errorf("entry = %s %s: %s", hist[0].Result, approval.ShortRevision(hist[0].Revision), hist[0].Message)
	}
	if n := w.patches.Load() - before; n != 1 {
		t.Errorf("%d patches of web; want 1 (the rollback), and the failed revision never applied", n)
	}
	if h := w.history(t); len(h) != 2 {
		t.Errorf("history has %d entries; want the rollback recorded once", len(h))
	}
	if calls := w.hook.get(); len(calls) != 1 {
		t.Errorf("rollback hook calls = %q; want one", calls)
	}
}

// TestRollbackOfAnApprovedPlan: in an environment that needs approval, an
// approved apply whose rollout fails is rolled back, and its revision is not
// proposed again over resyncs.
func TestRollbackOfAnApprovedPlan(t *testing.T) {
	h := newHarness(t, "prod")
	ns := h.ns["prod"]
	ec := h.cfg.Environments["prod"]
	ec.OnFailedRollout = config.OnFailedRolloutRollback
	h.cfg.Environments["prod"] = ec
	h.cfg.Workloads.RolloutTimeout = config.Duration{Duration: 4 * time.Second}
	gate := &countingGate{Gate: approval.Manual(), proposed: map[string]int{}}
	r := h.start(WithGate(gate), WithResync(200*time.Millisecond), WithRepropose(time.Hour))
	(&rollbackWorld{ns: ns}).blockNewPods(t)
	rev := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", rev)
	if code, b := r.call(t, "POST", "/api/v1/environments/prod/approve", tokenOf("alice"), map[string]string{"planHash": p.PlanHash}); code != http.StatusAccepted {
		t.Fatalf("approve = %d %s", code, b)
	}
	var hist []approval.Entry
	testenv.WaitFor(t, 60*time.Second, "the rolled-back entry", func() bool {
		h, err := r.d.History(context.Background(), "prod")
		hist = h
		return err == nil && len(h) == 1
	})
	if hist[0].Result != approval.ResultRolledBack || hist[0].Approver != "token:alice" {
		t.Errorf("entry = %s by %s: %s", hist[0].Result, hist[0].Approver, hist[0].Message)
	}
	if got := cluster.Env(t).Image(t, ns, "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("web runs %s; want web:0.9.0 back", got)
	}
	proposed := gate.count(p.PlanHash)
	from := passesOf(t, r, "prod")
	testenv.WaitFor(t, 30*time.Second, "three more passes over prod", func() bool { return passesOf(t, r, "prod") >= from+3 })
	if n := gate.count(p.PlanHash); n != proposed {
		t.Errorf("the rolled-back plan was proposed %d more times", n-proposed)
	}
	if v := r.environment(t, "prod"); v.Pending != nil {
		t.Errorf("pending after the rollback: %+v", v.Pending)
	}
}
