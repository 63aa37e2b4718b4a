package daemon

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// countingGate is the manual gate, counting what it is asked to propose.
type countingGate struct {
	approval.Gate
	mu       sync.Mutex
	proposed map[string]int // planHash → Propose calls
}

func (g *countingGate) Propose(ctx context.Context, p approval.Proposal) (approval.Decision, error) {
	g.mu.Lock()
	g.proposed[p.Plan.PlanHash]++
	g.mu.Unlock()
	return g.Gate.Propose(ctx, p)
}

func (g *countingGate) count(hash string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.proposed[hash]
}

// TestRejectionSticks: a rejected plan stays rejected through five resyncs
// and a restart (no pending plan, nothing proposed again), while a new
// revision is proposed as usual.
func TestRejectionSticks(t *testing.T) {
	const resync = 200 * time.Millisecond
	h := newHarness(t, "prod")
	gate := &countingGate{Gate: approval.Manual(), proposed: map[string]int{}}
	r := h.start(WithGate(gate), WithResync(resync), WithRepropose(time.Hour))
	rev := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", rev)
	code, b := r.call(t, "POST", "/api/v1/environments/prod/reject", testToken,
		api.DecisionRequest{PlanHash: p.PlanHash, Reason: "not today"})
	if code != http.StatusOK {
		t.Fatalf("reject = %d %s", code, b)
	}
	before, passes := gate.count(p.PlanHash), passesOf(t, r, "prod")
	// Six passes (five resyncs, and the one the rejection was taken in) end after the rejection.
	waitPasses(t, r, "prod", passes, 6)
	if v := r.environment(t, "prod"); v.Pending != nil {
		t.Errorf("pending again after five resyncs: %s %s", approval.ShortRevision(v.Pending.Revision), v.Pending.PlanHash)
	}
	if n := gate.count(p.PlanHash); n != before {
		t.Errorf("the rejected plan was proposed %d more times after five resyncs, want 0", n-before)
	}
	r.stop()

	gate2 := &countingGate{Gate: approval.Manual(), proposed: map[string]int{}}
	r2 := h.start(WithGate(gate2), WithResync(resync))
	waitPasses(t, r2, "prod", 0, 5)
	if v := r2.environment(t, "prod"); v.Pending != nil || gate2.count(p.PlanHash) != 0 {
		t.Errorf("after a restart: pending %v, proposed %d times; want still rejected", v.Pending != nil, gate2.count(p.PlanHash))
	}
	if hist := r2.history(t, "prod"); len(hist) != 1 || hist[0].Result != approval.ResultRejected || hist[0].Message != "not today" {
		t.Errorf("history %+v, want the one rejection", hist)
	}

	rev2 := h.commit("prod", false, map[string]string{"web": "1.1.0"})
	r2.push(t, h, "d2")
	p2 := r2.waitPending(t, "prod", rev2)
	testenv.WaitFor(t, 30*time.Second, "the new revision proposed", func() bool { return gate2.count(p2.PlanHash) > 0 })
}
