package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// releaseHoldGate is a gate whose Propose of a release approval waits
// until hold is closed (GitHub slow to show it), after saying so on shown.
type releaseHoldGate struct {
	recordingGate
	once  sync.Once
	shown chan struct{}
	hold  chan struct{}
}

func (g *releaseHoldGate) Propose(ctx context.Context, p approval.Proposal) (approval.Decision, error) {
	if !p.Release.IsZero() {
		g.once.Do(func() { close(g.shown) })
		select {
		case <-g.hold:
		case <-ctx.Done():
		}
	}
	return g.recordingGate.Propose(ctx, p)
}

// TestReleaseApprovalBusyHandover: an approval of prod's plan taken on the
// leader while its verification still runs waits for the busy worker and
// is then handed over through the state; when by then the release approval
// has begun to wait (the worker still busy showing it), the decision is
// refused as stale, as the worker itself refuses one taken before the wait:
// it was for the plan before its deployment, and counting it would release
// the deploy without anyone deciding on the release.
func TestReleaseApprovalBusyHandover(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "prod")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": strings.ReplaceAll(releasePipeline, "devel", "prod")}, "release approval")
	verifying, finish := make(chan struct{}), make(chan struct{})
	test := func(ctx context.Context, _ sequence.Request) (sequence.Result, error) {
		close(verifying)
		select {
		case <-finish:
		case <-ctx.Done():
		}
		return sequence.Result{Result: promote.ResultPass}, nil
	}
	gate := &releaseHoldGate{shown: make(chan struct{}), hold: make(chan struct{})}
	r := h.start(WithTask(promote.TaskTest, test), WithGate(gate))
	var p *approval.Pending
	testenv.WaitFor(t, 30*time.Second, "prod's plan pending", func() bool { p = r.environment(t, "prod").Pending; return p != nil })
	if _, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("alice")); err != nil {
		t.Fatal(err)
	}
	<-verifying
	r.d.busyWait = time.Second
	late := make(chan error, 1)
	go func() {
		_, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("bob"))
		late <- err
	}()
	time.Sleep(200 * time.Millisecond) // bob's decision is taken (and waits for the worker) before the wait begins
	close(finish)
	<-gate.shown // the release waits, the worker busy showing it
	err := <-late
	close(gate.hold)
	if !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("bob's approval, taken during the verification = %v; want ErrNotPending (stale for the release)", err)
	}
	testenv.WaitFor(t, 30*time.Second, "the gate showing the release", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return gate.proposed >= 2
	})
	// Bob's answer came (err above): no decision of his is handed over after it. One left in the
	// state would be taken within a second and counted; none is there, so none can be.
	testenv.WaitFor(t, 30*time.Second, "no decision handed over in prod's state", func() bool {
		has, err := r.d.store.HasHandover(ctx, "prod")
		return err == nil && !has
	})
	v := r.environment(t, "prod")
	if v.Pending == nil || !v.Pending.Release || len(v.Pending.Approvals) != 0 || len(r.history(t, "prod")) != 0 {
		t.Errorf("pending %+v, history %+v; want the release still waiting with no approval counted", v.Pending, r.history(t, "prod"))
	}
}
