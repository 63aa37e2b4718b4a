package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// killedMidApply leaves prod as a leader killed mid-apply does: a plan of
// two changes (api and web, 0.9.0 → 1.0.0) approved by carol and recorded in
// flight, api patched, web not, and no history. It returns the in-flight
// record and the approved changes.
func killedMidApply(t *testing.T, h *harness) (*approval.InFlight, []reconcile.Change) {
	t.Helper()
	env := cluster.Env(t)
	env.CreateDeployment(t, h.ns["prod"], "api", imageRepo+"api:0.9.0")
	rev := h.commit("prod", false, map[string]string{"api": "1.0.0", "web": "1.0.0"})
	r1 := h.start()
	p := r1.waitPending(t, "prod", rev)
	r1.stop()
	var plan struct{ Changes []reconcile.Change }
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) != 2 {
		t.Fatalf("pending plan has %d changes, want api's and web's: %s", len(plan.Changes), p.Plan)
	}
	f := &approval.InFlight{Revision: rev, PlanHash: p.PlanHash, Approver: "carol", Changes: pass.ChangesJSON(plan.Changes),
		Started: time.Now().UTC().Add(-time.Minute).Truncate(time.Second)}
	if err := state.NewStore(env.Clientset, h.stateNS).SetInFlight(context.Background(), "prod", f); err != nil {
		t.Fatal(err)
	}
	// The killed leader's one patch.
	if _, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Patch(context.Background(), "api", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"api","image":"`+imageRepo+`api:1.0.0"}]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return f, plan.Changes
}

// TestResumedApplyRecordsApprovedPlan: the leader that continues an apply
// cut short patches only what is left (web), and records one entry for the
// plan carol approved: its planHash, both changes, its start.
func TestResumedApplyRecordsApprovedPlan(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	f, approved := killedMidApply(t, h)
	api, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	r2 := h.start()
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "prod's history entry", func() bool { hist = r2.history(t, "prod"); return len(hist) > 0 })
	if len(hist) != 1 {
		t.Fatalf("prod history = %+v, want one entry", hist)
	}
	e := hist[0]
	if e.PlanHash != f.PlanHash || e.Result != approval.ResultSucceeded || e.Approver != "carol" || !e.Started.Equal(f.Started) {
		t.Errorf("entry: planHash %s, result %s, approver %s, started %v; want the approved %s, succeeded, carol, %v",
			e.PlanHash, e.Result, e.Approver, e.Started, f.PlanHash, f.Started)
	}
	var got []reconcile.Change
	if err := json.Unmarshal(e.Changes, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(approved, got); diff != "" {
		t.Errorf("entry's changes (-approved +recorded):\n%s", diff)
	}
	again, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != api.Generation {
		t.Errorf("api generation %d → %d: the continuation patched what was done", api.Generation, again.Generation)
	}
	if v := r2.environment(t, "prod"); v.InFlight != nil || v.Pending != nil {
		t.Errorf("after continuing: inFlight %v, pending %v; want neither (the entry settles the approved plan)", v.InFlight != nil, v.Pending != nil)
	}
}

// TestResumedApplyInterruptedKeepsApprovedPlan: a continuation itself shut
// down mid-apply leaves the approved plan in flight, not its remainder, and
// records its interruption under the approved planHash.
func TestResumedApplyInterruptedKeepsApprovedPlan(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	f, _ := killedMidApply(t, h)
	// web's pods can never be scheduled: its rollout never finishes.
	if _, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"nodeSelector":{"stagehand.io/no-such-node":"true"}}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r2 := h.start(WithApplyGrace(500 * time.Millisecond))
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	r2.stop()

	st, err := state.NewStore(env.Clientset, h.stateNS).Load(context.Background(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, st.InFlight); diff != "" {
		t.Errorf("in flight after the continuation's shutdown (-approved +stored):\n%s", diff)
	}
	if len(st.History) != 1 || st.History[0].Result != approval.ResultInterrupted || st.History[0].PlanHash != f.PlanHash {
		var got []string
		for _, e := range st.History {
			got = append(got, e.Result+" "+e.PlanHash)
		}
		t.Errorf("history = %q, want one interrupted entry of %s", got, f.PlanHash)
	}
}

// TestKilledAfterEveryPatchRecordsApprovedPlan: a leader killed after its
// last patch landed (no shutdown recorded it) leaves nothing to apply; the
// next leader still records the plan carol approved, once, saying its
// rollouts were not watched to the end, and patches nothing.
func TestKilledAfterEveryPatchRecordsApprovedPlan(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	f, approved := killedMidApply(t, h)
	// The killed leader's other patch landed too.
	if _, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Patch(context.Background(), "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"`+imageRepo+`web:1.0.0"}]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	web, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2 := h.start(WithResync(200 * time.Millisecond)) // a pass every 200 ms: each could record it again
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "prod's history entry", func() bool { hist = r2.history(t, "prod"); return len(hist) > 0 })
	// Later passes must not record it again: three more end, the first of them begun after the entry.
	waitPasses(t, r2, "prod", passesOf(t, r2, "prod"), 3)
	if hist = r2.history(t, "prod"); len(hist) != 1 {
		t.Fatalf("prod history = %+v, want one entry", hist)
	}
	e := hist[0]
	if e.PlanHash != f.PlanHash || e.Result != approval.ResultSucceeded || e.Approver != "carol" || !strings.Contains(e.Message, "not watched") {
		t.Errorf("entry: planHash %s, result %s, approver %s, message %q; want the approved %s, succeeded, carol, saying the rollouts were not watched",
			e.PlanHash, e.Result, e.Approver, e.Message, f.PlanHash)
	}
	var got []reconcile.Change
	if err := json.Unmarshal(e.Changes, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(approved, got); diff != "" {
		t.Errorf("entry's changes (-approved +recorded):\n%s", diff)
	}
	again, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != web.Generation {
		t.Errorf("web generation %d → %d: the next leader patched what was done", web.Generation, again.Generation)
	}
	if v := r2.environment(t, "prod"); v.InFlight != nil {
		t.Error("the approved plan is still in flight")
	}
}

// TestInterruptedAfterEveryPatchRecordsApprovedPlan: a leader stopped
// (SIGTERM, as a rolling upgrade does) while it watched the rollouts of its
// last patches records the apply interrupted and leaves it in flight; the
// next leader finds nothing left to patch and records the plan carol
// approved as succeeded, once, instead of clearing the in-flight record
// with the interrupted entry as the only word on it.
func TestInterruptedAfterEveryPatchRecordsApprovedPlan(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	f, _ := killedMidApply(t, h)
	if _, err := env.Clientset.AppsV1().Deployments(h.ns["prod"]).Patch(context.Background(), "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"`+imageRepo+`web:1.0.0"}]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the stopped leader's recordApply wrote: the interrupted entry,
	// the in-flight record kept for the next leader.
	interrupted := approval.Entry{Revision: f.Revision, PlanHash: f.PlanHash, Changes: f.Changes, Approver: f.Approver,
		Result: approval.ResultInterrupted, Message: "shut down during the apply", Started: f.Started, Finished: f.Started.Add(time.Second)}
	err := state.NewStore(env.Clientset, h.stateNS).Update(context.Background(), "prod", func(st *state.EnvState) {
		st.Record(interrupted, state.DefaultHistoryLimit)
	})
	if err != nil {
		t.Fatal(err)
	}
	r2 := h.start()
	testenv.WaitFor(t, 30*time.Second, "prod's apply no longer in flight", func() bool { return r2.environment(t, "prod").InFlight == nil })
	var got []string
	for _, e := range r2.history(t, "prod") {
		got = append(got, e.Result+" "+e.PlanHash)
	}
	want := []string{approval.ResultSucceeded + " " + f.PlanHash, approval.ResultInterrupted + " " + f.PlanHash}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prod history (-want +got):\n%s", diff)
	}
}
