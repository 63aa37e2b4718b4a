package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/lease"
)

func fastElection() LeaderElection {
	return LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

// TestLeadOneAtATime runs two candidates on one Lease: exactly one leads;
// when it shuts down (after finishing its work) the other takes over.
func TestLeadOneAtATime(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	var leaders atomic.Int32
	var maxLeaders atomic.Int32
	started := make(chan string, 2)
	run := func(ctx context.Context, id string, wg *sync.WaitGroup) {
		defer wg.Done()
		err := lease.Lead(ctx, lease.Candidate{Client: env.Clientset, Namespace: ns, Identity: id, Election: fastElection()}, func(bool) {}, func(lctx context.Context) {
			n := leaders.Add(1)
			if n > maxLeaders.Load() {
				maxLeaders.Store(n)
			}
			started <- id
			<-lctx.Done()
			time.Sleep(300 * time.Millisecond) // finishing a patch in flight
			leaders.Add(-1)
		})
		if err != nil {
			t.Errorf("lead %s: %v", id, err)
		}
	}
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopA()
	defer stopB()
	var wg sync.WaitGroup
	wg.Add(2)
	go run(ctxA, "a", &wg)
	go run(ctxB, "b", &wg)

	first := <-started
	select {
	case second := <-started:
		t.Fatalf("%s and %s lead at once", first, second)
	case <-time.After(3 * time.Second):
	}
	if first == "a" {
		stopA()
	} else {
		stopB()
	}
	select {
	case second := <-started:
		if second == first {
			t.Fatalf("%s led again after shutting down", first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not take over after the leader shut down")
	}
	stopA()
	stopB()
	wg.Wait()
	if got := maxLeaders.Load(); got != 1 {
		t.Errorf("at most %d leaders at once, want 1", got)
	}
}
