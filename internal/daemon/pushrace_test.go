package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestPushesToBothReplicas: pushes that reach the leader and the standby
// within milliseconds of each other (two commits, one hook each, or one
// commit's hook redelivered to the other replica) with a 10-minute poll
// interval: the newest commit is always applied promptly, and no revision
// is applied twice.
func TestPushesToBothReplicas(t *testing.T) {
	h := newHarness(t, "devel")
	leader, standby := startPair(t, h)
	send := func(r *running, delivery string) error {
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"0000000000000000000000000000000000000001","repository":{"clone_url":%q,"full_name":"acme/manifests"}}`, h.url)
		code, msg, err := githubtest.Send(context.Background(), r.url+"/webhook/github", testSecret,
			githubtest.Delivery{Event: "push", ID: delivery, Body: []byte(body)})
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("webhook: %d %s", code, msg)
		}
		return err
	}
	both := func(a, b *running, i int, between func()) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = send(a, fmt.Sprintf("race-%d-a", i)) })
		if between != nil {
			between()
		}
		wg.Go(func() { errs[1] = send(b, fmt.Sprintf("race-%d-b", i)) })
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// Polled from the state, not the API: WaitFor's 100 requests a second
	// outrun the per-token rate limit (429) on a loaded machine.
	stored := func() []approval.Entry {
		st, err := leader.d.store.Load(context.Background(), "devel")
		if err != nil {
			t.Fatal(err)
		}
		return st.History
	}
	entries := func() int { return len(stored()) }
	for i := range 4 {
		// Odd rounds the other way round: the later hook reaches the
		// standby, so only its wake-up can get the second commit applied.
		a, b := standby, leader
		if i%2 == 1 {
			a, b = leader, standby
		}
		// One commit, its hook delivered to both replicas at once.
		v := fmt.Sprintf("2.%d.0", i)
		h.commit("devel", true, map[string]string{"web": v})
		n := entries()
		both(a, b, i, nil)
		testenv.WaitFor(t, 30*time.Second, "devel to run web:"+v, func() bool {
			return cluster.Env(t).Image(t, h.ns["devel"], "web") == imageRepo+"web:"+v
		})
		testenv.WaitFor(t, 30*time.Second, "the apply recorded", func() bool { return entries() == n+1 })
		// Two commits, 10 ms apart, the first's hook to a, the second's
		// to b: the second ends applied.
		first, second := fmt.Sprintf("3.%d.0", i), fmt.Sprintf("3.%d.1", i)
		h.commit("devel", true, map[string]string{"web": first})
		n = entries()
		both(a, b, 10+i, func() {
			time.Sleep(10 * time.Millisecond)
			h.commit("devel", true, map[string]string{"web": second})
		})
		testenv.WaitFor(t, 30*time.Second, "devel to run web:"+second, func() bool {
			return cluster.Env(t).Image(t, h.ns["devel"], "web") == imageRepo+"web:"+second
		})
		testenv.WaitFor(t, 30*time.Second, "the apply recorded", func() bool {
			hist := stored()
			return len(hist) > n && hist[0].Revision == h.git.Head(t, "manifests", "main")
		})
	}
	// Each revision at most once in the history.
	seen := map[string]bool{}
	for _, e := range leader.history(t, "devel") {
		if seen[e.Revision] {
			t.Errorf("revision %s applied twice", e.Revision)
		}
		seen[e.Revision] = true
	}
	if standby.d.Leading() {
		t.Error("the standby leads")
	}
}
