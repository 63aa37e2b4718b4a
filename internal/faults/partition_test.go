package faults

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestStandbyCutOff: the standby reaches the API server through a proxy,
// which is cut for a while (the short form: 5 s; `make faults`: 30 s). Meanwhile
// the leader keeps the Lease and applies a revision, each workload patched
// once; nobody else ever holds the Lease. Restored, the standby rejoins: when
// the leader is then killed, it takes over and applies the next revision.
func TestStandbyCutOff(t *testing.T) {
	const n = 5
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	p := newProxy(t, f.apiServerAddr(t))
	b := f.start(t, "replica-b", nil, "KUBECONFIG="+f.kubeconfigVia(t, p))
	testenv.WaitFor(t, 60*time.Second, "replica-b's API up", func() bool {
		_, ok := f.history(ctx, b)
		return ok
	})

	// Watch the Lease all along: only replica-a may hold it until it is killed.
	var others atomic.Int32
	var killedA atomic.Bool
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if h := f.holder(ctx); h != "" && h != "replica-a" && !killedA.Load() {
				others.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-watched }()

	p.cut()
	cutOff := outage()
	rev2 := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "to 2.0.0 while the standby is cut off")
	f.applied(t, a, n, "2.0.0", rev2, 2*time.Minute)
	time.Sleep(cutOff)
	if !b.alive() {
		t.Fatalf("replica-b exited while cut off from the API server")
	}
	p.restore(t)
	restored := time.Now()
	time.Sleep(2 * time.Second) // it reconnects; then the leader dies
	a.kill(t)
	killedA.Store(true)
	rev3 := f.git.Repo("manifests").Commit(t, "main", manifest(n, "3.0.0"), "to 3.0.0 after the leader died")
	f.applied(t, b, n, "3.0.0", rev3, 2*time.Minute)
	recovered := time.Since(restored)
	if h := f.holder(ctx); h != "replica-b" {
		t.Errorf("Lease holder = %q, want replica-b", h)
	}
	if c := others.Load(); c > 0 {
		t.Errorf("the Lease was seen %d times held by another replica while replica-a led", c)
	}
	twice := 0
	counts := f.patches(t)
	for i := range n {
		if c := counts[svc(i)]; c > 2 { // one patch per revision: 2.0.0, 3.0.0
			twice++
			t.Errorf("%s patched %d times for two plans", svc(i), c)
		}
	}
	table.add(t, row{fault: "6 standby cut off from the API server " + cutOff.String(), survived: true, twice: twice, recover: recovered,
		note: "no other Lease holder while the leader lived; rejoined and took over; seconds from the restore to the next revision applied by it (leader killed 2 s after)"})
}
