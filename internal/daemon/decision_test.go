package daemon

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// recordingGate leaves plans pending and records what it hears.
type recordingGate struct {
	mu        sync.Mutex
	proposed  int
	completed []approval.Outcome
}

func (g *recordingGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.proposed++
	return approval.Decision{}, nil
}

func (g *recordingGate) Superseded(context.Context, approval.Proposal, string) error { return nil }

func (g *recordingGate) Completed(_ context.Context, _ approval.Proposal, o approval.Outcome) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.completed = append(g.completed, o)
	return nil
}

// TestHandedOverApprovalThatFailsIsReported: an approval handed over by another replica that the leader
// cannot carry out (here: the manifest cannot be resolved when re-planning) is not only logged: the gate
// hears it failed with nothing applied (GitHub shows it on the check run), the plan stays pending, and the
// next pass proposes it again.
func TestHandedOverApprovalThatFailsIsReported(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	h := newHarness(t, "prod")
	gate := &recordingGate{}
	d, err := New(h.cfg, WithRESTConfig(env.Config), WithGate(gate),
		WithSourceOptions(gitsource.WithCacheDir(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil {
		t.Fatalf("prod pending after one pass: %+v, %v", st, err)
	}
	pending := *st.Pending
	// The newest revision is unchanged, but its files cannot be resolved any more.
	d.mu.Lock()
	d.latest = &gitsource.Snapshot{Revision: pending.Revision, FS: fstest.MapFS{}, Time: time.Now()}
	d.mu.Unlock()
	if _, err := d.handOver(ctx, "prod", decision{approve: true, planHash: pending.PlanHash, who: "maria"}); err != nil {
		t.Fatal(err)
	}
	w := d.workers["prod"]
	w.pickUp(ctx)

	if len(gate.completed) != 1 || gate.completed[0].Result != approval.ResultFailed || gate.completed[0].Approver != "maria" ||
		gate.completed[0].Apply != nil || !strings.Contains(gate.completed[0].Message, "approving failed, nothing was applied") {
		t.Errorf("gate heard %+v, want one failed outcome approved by maria with nothing applied", gate.completed)
	}
	st, err = d.store.Load(ctx, "prod")
	if err != nil || st.Pending == nil || st.Pending.PlanHash != pending.PlanHash || st.Handover != nil || len(st.History) != 0 {
		t.Errorf("state after the failed approval: %+v, %v; want the plan still pending, no hand-over, no history", st, err)
	}
	if w.proposed != "" {
		t.Errorf("the failed plan is remembered as proposed (%q): it would not be proposed again", w.proposed)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestApprovalPlansOnce: approving a pending plan plans once, inside pkg/reconcile's Apply (which still
// checks the planHash), not also before it and again for the status after it. Only planning lists the
// StatefulSets of a target, so those LISTs count the plans.
func TestApprovalPlansOnce(t *testing.T) {
	h := newHarness(t, "prod")
	var plans atomic.Int64
	rc := rest.CopyConfig(cluster.Env(t).Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Path == "/apis/apps/v1/namespaces/"+h.ns["prod"]+"/statefulsets" {
				plans.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	r := h.start(WithRESTConfig(rc))
	p := r.waitPending(t, "prod", h.git.Head(t, "manifests", "main"))
	before := plans.Load()
	if code, b := r.call(t, "POST", "/api/v1/environments/prod/approve", testToken, api.DecisionRequest{PlanHash: p.PlanHash}); code != http.StatusAccepted {
		t.Fatalf("approve = %d %s", code, b)
	}
	// The status follows the apply, after its history entry.
	testenv.WaitFor(t, 30*time.Second, "prod in sync after the apply", func() bool {
		v := r.environment(t, "prod")
		return len(r.history(t, "prod")) == 1 && len(v.Services) == 1 && v.Services[0].Targets[0].State == status.StateInSync && v.PlanHash == ""
	})
	if got := plans.Load() - before; got != 1 {
		t.Errorf("an approval planned %d times, want once", got)
	}
}
