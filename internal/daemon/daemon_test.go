package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestSkipConfirmationDeploys: devel (skipConfirmation) deploys the first
// revision by itself, and a commit bumping its tag is applied after a push
// webhook; prod waits.
func TestSkipConfirmationDeploys(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")

	rev := h.commit("devel", true, map[string]string{"web": "1.1.0"})
	r.push(t, h, "delivery-1")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.1.0")

	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("prod runs %s without approval, want web:0.9.0", got)
	}
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "two history entries", func() bool { hist = r.history(t, "devel"); return len(hist) == 2 })
	got := []string{hist[0].Revision + " " + hist[0].Result + " " + hist[0].Approver, hist[1].Result + " " + hist[1].Approver}
	want := []string{rev + " succeeded stagehand:skipConfirmation", "succeeded stagehand:skipConfirmation"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devel history (-want +got):\n%s", diff)
	}
	v := r.environment(t, "devel")
	testenv.WaitFor(t, 30*time.Second, "devel in sync", func() bool {
		v = r.environment(t, "devel")
		return v.Revision == rev && len(v.Services) == 1 && v.Services[0].Targets[0].State == status.StateInSync
	})
	if v.LastResult == nil || v.LastResult.Revision != rev || v.Pending != nil {
		t.Errorf("devel view: lastResult %+v pending %+v", v.LastResult, v.Pending)
	}
	wantImages := []status.Image{{DockerName: "web", Desired: "web:1.1.0", Live: "web:1.1.0"}}
	if diff := cmp.Diff(wantImages, v.Services[0].Targets[0].Images); diff != "" {
		t.Errorf("devel in sync: images (-want +got):\n%s", diff)
	}
	prod := r.environment(t, "prod")
	wantImages = []status.Image{{DockerName: "web", Workload: "Deployment/web", Desired: imageRepo + "web:1.0.0", Live: imageRepo + "web:0.9.0"}}
	if diff := cmp.Diff(wantImages, prod.Services[0].Targets[0].Images); diff != "" {
		t.Errorf("prod pending: images (-want +got):\n%s", diff)
	}
	if n := metricValue(t, r.d.metrics, "stagehand_changes_applied_total", "environment=devel"); n != 2 {
		t.Errorf("stagehand_changes_applied_total{environment=devel} = %v, want 2", n)
	}
	events, err := env.Clientset.CoreV1().Events(h.ns["devel"]).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deploying := 0
	for _, e := range events.Items {
		if e.Reason == "Deploying" && e.InvolvedObject.Name == "web" {
			deploying++
		}
	}
	if deploying != 2 {
		t.Errorf("%d Deploying events on web, want 2 (one per apply)", deploying)
	}
}

// TestApproveOverAPI: prod's plan waits; the API refuses a wrong token and a
// stale hash, then approving the pending hash deploys it.
func TestApproveOverAPI(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	rev := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", rev)
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("prod runs %s before approval", got)
	}
	if v := r.environment(t, "prod"); v.Phase != status.PhaseAwaitingApproval {
		t.Errorf("phase with a plan pending = %q, want AwaitingApproval", v.Phase)
	}
	waitPendingGauge(t, r.d, "prod", 1)
	var plan struct {
		Changes []struct{ From, To string }
	}
	if err := json.Unmarshal(p.Plan, &plan); err != nil || len(plan.Changes) != 1 || plan.Changes[0].To != imageRepo+"web:1.0.0" {
		t.Fatalf("pending plan %s (%v), want one change to web:1.0.0", p.Plan, err)
	}

	body := api.DecisionRequest{PlanHash: p.PlanHash}
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"no token", "", 401}, {"wrong token", "nope", 401}} {
		if code, b := r.call(t, "POST", "/api/v1/environments/prod/approve", tc.token, body); code != tc.want {
			t.Errorf("%s: approve = %d %s, want %d", tc.name, code, b, tc.want)
		}
		if code, _ := r.call(t, "GET", "/api/v1/environments", tc.token, nil); code != tc.want {
			t.Errorf("%s: list = %d, want %d", tc.name, code, tc.want)
		}
	}
	code, b := r.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: "sha256:stale"})
	if code != http.StatusConflict || !strings.Contains(string(b), p.PlanHash) || !strings.Contains(string(b), rev) {
		t.Errorf("stale approve = %d %s, want 409 naming pending plan %s for %s", code, b, p.PlanHash, rev)
	}
	if code, b := r.call(t, "POST", "/api/v1/environments/nope/approve", testToken, body); code != http.StatusNotFound {
		t.Errorf("unknown environment = %d %s, want 404", code, b)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Fatalf("prod runs %s after refused approvals", got)
	}

	code, b = r.call(t, "POST", "/api/v1/environments/prod/approve", tokenOf("alice"), body)
	if code != http.StatusAccepted {
		t.Fatalf("approve = %d %s, want 202", code, b)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "prod history", func() bool { hist = r.history(t, "prod"); return len(hist) == 1 })
	e := hist[0]
	if e.Result != approval.ResultSucceeded || e.Approver != "token:alice" || e.PlanHash != p.PlanHash || e.Revision != rev ||
		e.Finished.Before(e.Started) || len(e.Workloads) == 0 {
		t.Errorf("history entry = %+v", e)
	}
	if v := r.environment(t, "prod"); v.Pending != nil || v.Phase != status.PhaseIdle {
		t.Errorf("after the apply: pending %+v, phase %q; want nothing pending, Idle", v.Pending, v.Phase)
	}
	waitPendingGauge(t, r.d, "prod", 0)
	// Approving again: nothing is pending.
	code, b = r.call(t, "POST", "/api/v1/environments/prod/approve", testToken, body)
	if code != http.StatusConflict || !strings.Contains(string(b), "nothing is pending") {
		t.Errorf("second approve = %d %s, want 409 nothing is pending", code, b)
	}
}

// TestRejectAndSupersede: a rejected plan is recorded and not applied; a newer
// revision supersedes a pending plan, and approving the old one is refused.
func TestRejectAndSupersede(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	p1 := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	code, b := r.call(t, "POST", "/api/v1/environments/prod/reject", tokenOf("bob"),
		api.DecisionRequest{PlanHash: p1.PlanHash, Reason: "not today"})
	if code != http.StatusOK {
		t.Fatalf("reject = %d %s", code, b)
	}
	hist := r.history(t, "prod")
	if len(hist) != 1 || hist[0].Result != approval.ResultRejected || hist[0].Approver != "token:bob" || hist[0].Message != "not today" {
		t.Errorf("history after reject = %+v", hist)
	}
	if v := r.environment(t, "prod"); v.Pending != nil {
		t.Errorf("pending after reject: %+v", v.Pending)
	}
	waitPendingGauge(t, r.d, "prod", 0)

	rev2 := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	r.push(t, h, "d2")
	p2 := r.waitPending(t, "prod", rev2)
	rev3 := h.commit("prod", false, map[string]string{"web": "1.2.0"})
	r.push(t, h, "d3")
	p3 := r.waitPending(t, "prod", rev3)
	code, b = r.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: p2.PlanHash})
	if code != http.StatusConflict || !strings.Contains(string(b), p3.PlanHash) {
		t.Errorf("approving a superseded plan = %d %s, want 409 naming %s", code, b, p3.PlanHash)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("prod runs %s, want 0.9.0 (nothing approved)", got)
	}
}

// TestRestartKeepsState: a second daemon (a restart) shows the pending plan
// and history of the first, and approving through it works.
func TestRestartKeepsState(t *testing.T) {
	h := newHarness(t)
	r1 := h.start()
	rev := h.git.Head(t, "manifests", "main")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	p := r1.waitPending(t, "prod", rev)
	testenv.WaitFor(t, 30*time.Second, "devel history", func() bool { return len(r1.history(t, "devel")) == 1 })
	r1.stop()

	r2 := h.start()
	testenv.WaitFor(t, 20*time.Second, "the restarted daemon to lead", r2.d.Leading)
	if got := r2.environment(t, "prod").Pending; got == nil || got.PlanHash != p.PlanHash {
		t.Fatalf("pending after restart = %+v, want plan %s", got, p.PlanHash)
	}
	// The new holder's gauge is the state it read, with no proposal of its own.
	waitPendingGauge(t, r2.d, "prod", 1)
	if hist := r2.history(t, "devel"); len(hist) != 1 || hist[0].Revision != rev {
		t.Errorf("devel history after restart = %+v", hist)
	}
	code, b := r2.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: p.PlanHash})
	if code != http.StatusAccepted {
		t.Fatalf("approve after restart = %d %s", code, b)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
}

// TestInterruptedApplyContinues: an apply recorded as in flight (the process
// stopped mid-way) is continued by the next leader without a new approval.
func TestInterruptedApplyContinues(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t)
	r1 := h.start()
	rev := h.git.Head(t, "manifests", "main")
	p := r1.waitPending(t, "prod", rev)
	r1.stop()

	var plan struct{ Changes json.RawMessage }
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	// What a shutdown between "recorded in flight" and "recorded in history" leaves.
	if err := state.NewStore(env.Clientset, h.stateNS).SetInFlight(context.Background(), "prod",
		&approval.InFlight{Revision: rev, PlanHash: p.PlanHash, Approver: "carol", Changes: plan.Changes, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r2 := h.start()
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 20*time.Second, "prod history", func() bool { hist = r2.history(t, "prod"); return len(hist) == 1 })
	if hist[0].Approver != "carol" || hist[0].Result != approval.ResultSucceeded {
		t.Errorf("continued apply recorded as %+v, want approver carol, succeeded", hist[0])
	}
	if v := r2.environment(t, "prod"); v.InFlight != nil || v.Pending != nil {
		t.Errorf("after continuing: inFlight %+v pending %+v", v.InFlight, v.Pending)
	}
}

// TestTwoReplicas: two daemons on one state namespace: one leads and applies,
// the other serves the same API and hands approvals to the leader; when the
// leader goes, the other takes over.
func TestTwoReplicas(t *testing.T) {
	h := newHarness(t)
	a := h.start(WithIdentity("replica-a"))
	b := h.start(WithIdentity("replica-b"))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "devel history", func() bool { return len(a.history(t, "devel")) == 1 })
	if a.d.Leading() == b.d.Leading() {
		t.Fatalf("leading: a=%v b=%v, want exactly one", a.d.Leading(), b.d.Leading())
	}
	leader, standby := a, b
	if b.d.Leading() {
		leader, standby = b, a
	}
	applied := func(r *running) float64 {
		return metricValue(t, r.d.metrics, "stagehand_changes_applied_total", "environment=devel")
	}
	if applied(leader) != 1 || applied(standby) != 0 {
		t.Errorf("changes applied: leader %v, standby %v; want 1 and 0", applied(leader), applied(standby))
	}
	if diff := cmp.Diff(leader.history(t, "devel"), standby.history(t, "devel")); diff != "" {
		t.Errorf("replicas disagree on history (-leader +standby):\n%s", diff)
	}
	// An approval sent to the standby is handed to the leader, which applies it.
	p := standby.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	code, body := standby.call(t, "POST", "/api/v1/environments/prod/approve", tokenOf("erin"),
		api.DecisionRequest{PlanHash: p.PlanHash})
	if code != http.StatusAccepted {
		t.Fatalf("approve on the standby = %d %s, want 202", code, body)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 20*time.Second, "prod history", func() bool { hist = standby.history(t, "prod"); return len(hist) == 1 })
	if hist[0].Approver != "token:erin" || hist[0].Result != approval.ResultSucceeded {
		t.Errorf("prod history = %+v, want approved by token:erin, succeeded", hist[0])
	}
	if applied(standby) != 0 {
		t.Errorf("the standby applied %v changes", applied(standby))
	}
	// The leader goes away: the standby takes over.
	leader.stop()
	testenv.WaitFor(t, 20*time.Second, "the standby to lead", standby.d.Leading)
	rev := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	standby.push(t, h, "after-failover")
	p = standby.waitPending(t, "prod", rev)
	code, body = standby.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: p.PlanHash})
	if code != http.StatusAccepted {
		t.Fatalf("approve on the new leader = %d %s", code, body)
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.1.0")
}

// TestBrokenEnvironment: a manifest broken in one environment is reported
// there and leaves the others deploying.
func TestBrokenEnvironment(t *testing.T) {
	h := newHarness(t, "devel", "staging")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/staging/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockertag": "1.0.0"}]}]}`,
	}, "break staging")
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	var v status.Environment
	testenv.WaitFor(t, 30*time.Second, "staging error", func() bool { v = r.environment(t, "staging"); return v.Error != "" })
	if !strings.Contains(v.Error, "environments/staging/manifest.json") || !strings.Contains(v.Error, "dockerTag") {
		t.Errorf("staging error %q, want file and the suggested key", v.Error)
	}
	if got := cluster.Env(t).Image(t, h.ns["staging"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("broken staging was applied: %s", got)
	}
	if n := metricValue(t, r.d.metrics, "stagehand_failures_total", "environment=staging", "stage=resolve"); n < 1 {
		t.Errorf("resolve failures for staging = %v, want ≥ 1", n)
	}
	// Fixing it deploys it.
	rev := h.commit("staging", true, map[string]string{"web": "1.0.1"})
	r.push(t, h, "fix")
	waitImage(t, h.ns["staging"], "web", imageRepo+"web:1.0.1")
	testenv.WaitFor(t, 30*time.Second, "staging error cleared", func() bool {
		v = r.environment(t, "staging")
		return v.Error == "" && v.Revision == rev
	})
}

// TestHTTPEndpoints: health, readiness, metrics, the environment list and layout.
func TestHTTPEndpoints(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "devel apply recorded", func() bool { return len(r.history(t, "devel")) == 1 })
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, b := r.call(t, "GET", path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, code, b)
		}
	}
	code, b := r.call(t, "GET", "/metrics", "", nil)
	for _, m := range []string{"stagehand_reconcile_duration_seconds", "stagehand_revision_age_seconds",
		"stagehand_pending_approvals", "stagehand_changes_applied_total", "stagehand_leader 1",
		"stagehand_step_duration_seconds_count{", `step="plan"}`, `step="gate"}`} {
		if code != http.StatusOK || !strings.Contains(string(b), m) {
			t.Errorf("GET /metrics = %d, missing %s", code, m)
		}
	}
	code, b = r.call(t, "GET", "/api/v1/environments", testToken, nil)
	var list struct{ Environments []status.Environment }
	if err := json.Unmarshal(b, &list); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/v1/environments = %d %v %s", code, err, b)
	}
	var names []string
	for _, e := range list.Environments {
		names = append(names, e.Name)
	}
	if diff := cmp.Diff([]string{"devel", "prod"}, names); diff != "" {
		t.Errorf("environments (-want +got):\n%s", diff)
	}
	code, b = r.call(t, "GET", "/api/v1/environments/devel/layout", testToken, nil)
	if code != http.StatusOK || !strings.Contains(string(b), "environments/devel/manifest.json") {
		t.Errorf("GET layout = %d %s", code, b)
	}
	if code, _ := r.call(t, "GET", "/api/v1/locks", testToken, nil); code != http.StatusOK {
		t.Errorf("GET /api/v1/locks = %d, want 200 (lock API mounted)", code)
	}
	if code, _ := r.call(t, "GET", "/api/v1/locks", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/locks without token = %d, want 401", code)
	}
}

// TestShutdownDuringApply: a shutdown while an apply waits for a rollout lets
// the patch stand, records the apply as interrupted, and the next leader
// re-plans (nothing left) without patching again and records the approved
// plan succeeded, once, after the interrupted entry.
func TestShutdownDuringApply(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t, "devel")
	// Pods that can never be scheduled: the rollout never finishes.
	deps := env.Clientset.AppsV1().Deployments(h.ns["devel"])
	if _, err := deps.Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"nodeSelector":{"stagehand.io/no-such-node":"true"}}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r1 := h.start(WithApplyGrace(500 * time.Millisecond))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	patched, err := deps.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	r1.stop()
	if d := time.Since(stopped); d > 15*time.Second {
		t.Errorf("shutting down took %s with a 500ms apply grace", d)
	}
	st, err := state.NewStore(env.Clientset, h.stateNS).Load(context.Background(), "devel")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Result != approval.ResultInterrupted || st.InFlight == nil {
		t.Fatalf("after shutdown: history %+v, inFlight %+v; want one interrupted entry and the apply in flight", st.History, st.InFlight)
	}

	r2 := h.start()
	testenv.WaitFor(t, 30*time.Second, "the in-flight record to be settled", func() bool {
		v := r2.environment(t, "devel")
		return v.InFlight == nil && v.Revision != ""
	})
	again, err := deps.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != patched.Generation {
		t.Errorf("generation %d → %d: the restart patched again", patched.Generation, again.Generation)
	}
	var got []string
	for _, e := range r2.history(t, "devel") {
		got = append(got, e.Result+" "+e.PlanHash)
	}
	want := []string{approval.ResultSucceeded + " " + st.InFlight.PlanHash, approval.ResultInterrupted + " " + st.InFlight.PlanHash}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history after restart (-want +got):\n%s", diff)
	}
}

// TestLockBlocksAndShows: a lock on a prod service blocks its change; the
// environment view shows the lock and the blocked service, and nothing is
// pending or applied.
func TestLockBlocksAndShows(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	now := time.Now()
	if _, err := r.d.lockSvc.Lock(context.Background(), lock.Lock{Path: "apps/prod/a/web", Type: lock.Incident,
		Author: "sre", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rev := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	r.push(t, h, "locked")
	var v status.Environment
	// The only change is blocked: the pending plan is withdrawn, nothing replaces it.
	testenv.WaitFor(t, 30*time.Second, "prod planned at the new revision, nothing pending", func() bool {
		v = r.environment(t, "prod")
		return v.Revision == rev && v.Pending == nil
	})
	if len(v.Locks) != 1 || v.Locks[0].Path != "apps/prod/a/web" {
		t.Errorf("locks = %+v, want the lock at apps/prod/a/web", v.Locks)
	}
	if len(v.Services) != 1 || v.Services[0].Targets[0].State != status.StateBlocked || len(v.Services[0].Targets[0].Locks) == 0 {
		t.Errorf("services = %+v, want web blocked with the lock's message", v.Services)
	}
	if got := cluster.Env(t).Image(t, h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("prod runs %s under a lock", got)
	}
}

// TestDeadLeadersDeployLockIsTakenOver: a replica killed mid-apply leaves its
// deploy lock on the target for an hour; the next leader applies at once,
// and the lock is gone after the apply. A human's deploy lock on another
// environment's target still blocks.
func TestDeadLeadersDeployLockIsTakenOver(t *testing.T) {
	env := cluster.Env(t)
	h := newHarness(t, "devel", "qa")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/qa/manifest.json": manifestJSON(true, map[string]string{"web": "1.0.0"})}, "qa skips confirmation")
	clients, err := wire.NewClients(wire.WithRESTConfig(env.Config))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := wire.LockService(clients, h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, l := range []lock.Lock{
		{Path: "apps/devel/a", Type: lock.Deploy, Author: LockAuthor}, // left by a SIGKILLed leader
		{Path: "apps/qa/a", Type: lock.Deploy, Author: "alice"},
	} {
		l.CreatedAt, l.ExpiresAt = now, now.Add(time.Hour)
		if _, err := svc.Lock(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "the taken-over deploy lock released after the apply", func() bool {
		_, err := svc.Get(context.Background(), "apps/devel/a")
		return errors.Is(err, lock.ErrNotFound)
	})
	testenv.WaitFor(t, 30*time.Second, "qa's change blocked by alice's lock", func() bool {
		v := r.environment(t, "qa")
		return len(v.Services) == 1 && v.Services[0].Targets[0].State == status.StateBlocked
	})
	if got := cluster.Env(t).Image(t, h.ns["qa"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("qa runs %s under alice's deploy lock", got)
	}
}

// waitPendingGauge waits for d's stagehand_pending_approvals of env to be
// want.
func waitPendingGauge(t *testing.T, d *Daemon, env string, want float64) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("stagehand_pending_approvals{environment=%q} %v", env, want), func() bool {
		return metricValue(t, d.metrics, "stagehand_pending_approvals", "environment="+env) == want
	})
}
