package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/lease"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestLeaderLosesLease: the one leader whose Lease another replica takes
// (its renewals refused) has its work cancelled with lease.ErrLost; one that
// shuts down, without.
func TestLeaderLosesLease(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	le := LeaderElection{Enable: true, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	// began says the work started: a Lease that names the replica is not
	// enough, as its elector may still be reading the answer that made it
	// leader, and a shutdown then ends the election with no work begun.
	began, causes := make(chan struct{}, 2), make(chan error, 2)
	work := func(lctx context.Context) {
		began <- struct{}{}
		<-lctx.Done()
		causes <- context.Cause(lctx)
	}
	receive := func(what string) {
		t.Helper()
		select {
		case <-began:
		case <-time.After(30 * time.Second):
			t.Fatalf("no work began: %s", what)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- lease.Lead(ctx, lease.Candidate{Client: env.Clientset, Namespace: ns, Identity: "me", Election: le}, func(bool) {}, work)
	}()
	leases := env.Clientset.CoordinationV1().Leases(ns)
	testenv.WaitFor(t, 20*time.Second, "leading", func() bool {
		l, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "me"
	})
	// Another replica holds the Lease from now on, renewing it.
	other := "other"
	steal := func() {
		l, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = &other, &now, &now
		_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	var got error
	testenv.WaitFor(t, 20*time.Second, "the work cancelled after the Lease was taken", func() bool {
		steal()
		select {
		case got = <-causes:
			return true
		default:
			return false
		}
	})
	if !errors.Is(got, lease.ErrLost) {
		t.Errorf("lease taken: cause %v, want lease.ErrLost", got)
	}
	receive("me leading") // sent before its cause
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("lead: %v", err)
	}

	// Shutting down while leading: graceful.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() {
		done <- lease.Lead(ctx2, lease.Candidate{Client: env.Clientset, Namespace: ns, Identity: "third", Election: le}, func(bool) {}, work)
	}()
	receive("third leading")
	if l, err := leases.Get(ctx2, lease.Name, metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "third" {
		t.Fatalf("third works without holding the Lease: %+v, %v", l, err)
	}
	cancel2()
	select {
	case got := <-causes:
		if errors.Is(got, lease.ErrLost) {
			t.Errorf("shutdown: cause %v, want no lease.ErrLost", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the work did not end after the shutdown")
	}
	<-done
}

// TestEnvLeaseDeletedByHand: someone deletes an environment's Lease while
// its holder works it. The holder stops, one replica (either) takes the
// environment in a later term (terms only grow, so the old holder's writes
// stay fenced), it is never held twice, and the next revision is applied
// once.
func TestEnvLeaseDeletedByHand(t *testing.T) {
	h := newHarness(t, "devel", "prod")
	rs := startShards(t, h, 2)
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "the first apply recorded", func() bool { return len(rs[0].history(t, "devel")) == 1 })
	ctx := context.Background()
	leases := cluster.Env(t).Clientset.CoordinationV1().Leases(h.stateNS)
	old, err := leases.Get(ctx, lease.EnvName("devel"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := applied(t, rs, "devel")
	if err := leases.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * shardElection().LeaseDuration)
	for time.Now().Before(deadline) {
		if hs := holders(rs); len(hs["devel"]) > 1 {
			t.Fatalf("devel held by replicas %v at once", hs["devel"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitHeld(t, rs, 2)
	l, err := leases.Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("devel's Lease after the deletion: %v", err)
	}
	if *l.Spec.LeaseTransitions <= *old.Spec.LeaseTransitions {
		t.Errorf("devel's Lease recreated in term %d, want after the deleted one's %d", *l.Spec.LeaseTransitions, *old.Spec.LeaseTransitions)
	}
	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	rs[1-holderOfEnv(rs, "devel")].push(t, h, "push-after-delete")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	testenv.WaitFor(t, 30*time.Second, "the apply recorded", func() bool { return len(rs[0].history(t, "devel")) == 2 })
	if got := applied(t, rs, "devel") - before; got != 1 {
		t.Errorf("%v changes applied after the deletion, want 1", got)
	}
}

// TestShutdownRenewsWhileStopping: a replica with
// leaderElection.perEnvironment shutting down keeps renewing the Leases
// of the environments whose workers are still finishing (the apply grace
// may outlast the lease duration): no other replica takes one before its
// worker has stopped; then it is released and taken at once.
func TestShutdownRenewsWhileStopping(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	le := LeaderElection{Enable: true, ReleaseOnCancel: true, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	store := state.NewStore(env.Clientset, ns)
	var aWorking, bWorking atomic.Bool
	var overlap atomic.Bool
	newReplica := func(id string, working *atomic.Bool, other *atomic.Bool, finish time.Duration) *lease.Shard {
		return lease.NewShard(lease.Deps{Leases: env.Clientset.CoordinationV1().Leases(ns), Store: store, Identity: id, Election: le,
			Envs: []string{"devel"},
			Start: func(ctx context.Context, _, _ string, _ func()) {
				working.Store(true)
				if other.Load() {
					overlap.Store(true)
				}
				<-ctx.Done()
				time.Sleep(finish) // finishing the apply in flight
				working.Store(false)
			},
		})
	}
	a := newReplica("replica-a", &aWorking, &bWorking, 2*le.LeaseDuration)
	actx, stopA := context.WithCancel(context.Background())
	aDone := make(chan struct{})
	go func() { defer close(aDone); a.Run(actx) }()
	testenv.WaitFor(t, 20*time.Second, "a working devel", aWorking.Load)
	b := newReplica("replica-b", &bWorking, &aWorking, 0)
	bctx, stopB := context.WithCancel(context.Background())
	bDone := make(chan struct{})
	go func() { defer close(bDone); b.Run(bctx) }()
	defer func() { stopB(); <-bDone }()
	time.Sleep(2 * le.RetryPeriod) // b looks at the Leases
	stopA()
	<-aDone
	testenv.WaitFor(t, 30*time.Second, "b working devel after a stopped", bWorking.Load)
	if overlap.Load() {
		t.Error("b began working devel while a's worker was still finishing")
	}
}
