package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

var sixEnvs = []string{"devel", "qa", "stage", "prod", "eu", "us"}

// shardElection is fast leader election whose Leases outlive a replica
// that stops (as if killed: nothing is released).
func shardElection() LeaderElection {
	return LeaderElection{Enable: true, ReleaseOnCancel: false,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

// startShards starts n replicas of h with leaderElection.perEnvironment and
// a 10-minute poll interval, and waits until every environment is held.
func startShards(t testing.TB, h *harness, n int, opts ...Option) []*running {
	t.Helper()
	h.cfg.LeaderElection.PerEnvironment = true
	h.cfg.Source.Interval = config.Duration{Duration: 10 * time.Minute}
	var rs []*running
	for i := range n {
		rs = append(rs, h.start(append([]Option{WithIdentity(fmt.Sprintf("replica-%d", i)), WithLeaderElection(shardElection())}, opts...)...))
	}
	waitHeld(t, rs, len(h.ns))
	return rs
}

// holders maps every environment held to the replicas holding it.
func holders(rs []*running) map[string][]int {
	out := map[string][]int{}
	for i, r := range rs {
		for _, env := range r.d.Held() {
			out[env] = append(out[env], i)
		}
	}
	return out
}

// waitHeld waits until each of envs environments is held by exactly one of rs.
func waitHeld(t testing.TB, rs []*running, envs int) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%d environments held once each", envs), func() bool {
		hs := holders(rs)
		for _, h := range hs {
			if len(h) != 1 {
				return false
			}
		}
		return len(hs) == envs
	})
}

func holderOfEnv(rs []*running, env string) int {
	for i, r := range rs {
		if slices.Contains(r.d.Held(), env) {
			return i
		}
	}
	return -1
}

func applied(t testing.TB, rs []*running, env string) float64 {
	n := 0.0
	for _, r := range rs {
		n += metricValue(t, r.d.metrics, "stagehand_changes_applied_total", "environment="+env)
	}
	return n
}

// TestPerEnvironment: three replicas split six environments (none holds more
// than its share plus one, and soon exactly its share); each environment's
// status and each replica's /readyz say who holds what; a push to a replica
// that does not hold an environment reaches its holder; when a replica dies
// (its Leases are not released), the others take its environments within
// the lease duration and continue their state: an interrupted apply is
// finished without asking again, a pending plan is approved through another
// replica and applied; nothing is applied twice.
func TestPerEnvironment(t *testing.T) {
	h := newHarness(t, sixEnvs...)
	rs := startShards(t, h, 3)
	share := 2
	testenv.WaitFor(t, 30*time.Second, "every replica to hold its share", func() bool {
		for _, r := range rs {
			if n := len(r.d.Held()); n > share+1 {
				t.Fatalf("%s holds %v, more than its share %d + 1", r.d.o.identity, r.d.Held(), share)
			} else if n != share {
				return false
			}
		}
		return true
	})
	// Every replica shows every environment in stagehand_environment_held,
	// 0 where it does not hold it: an environment nobody holds would show.
	testenv.WaitFor(t, 30*time.Second, "stagehand_environment_held of every environment on every replica", func() bool {
		for _, r := range rs {
			if seriesCount(t, r.d.metrics, "stagehand_environment_held") != len(sixEnvs) {
				return false
			}
			for _, env := range sixEnvs {
				want := 0.0
				if slices.Contains(r.d.Held(), env) {
					want = 1
				}
				if metricValue(t, r.d.metrics, "stagehand_environment_held", "environment="+env) != want {
					return false
				}
			}
		}
		return true
	})
	for i, r := range rs {
		code, body := r.call(t, "GET", "/readyz", "", nil)
		if want := "ok (holds " + strings.Join(r.d.Held(), ", ") + ")\n"; code != http.StatusOK || string(body) != want {
			t.Errorf("replica %d /readyz = %d %q, want 200 %q", i, code, body, want)
		}
	}
	for _, env := range sixEnvs {
		if got, want := rs[0].environment(t, env).Holder, rs[holderOfEnv(rs, env)].d.o.identity; got != want {
			t.Errorf("environment %s: holder %q, want %q", env, got, want)
		}
	}
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")

	// A push to a replica that does not hold devel reaches devel's holder.
	// (The other environments' pending plans stay at the revision they were
	// proposed at: the commit changes nothing of theirs.)
	proposed := h.git.Head(t, "manifests", "main")
	other := rs[(holderOfEnv(rs, "devel")+1)%len(rs)]
	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	start := time.Now()
	other.push(t, h, "push-to-non-holder")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	waitWebhookToPatch(t, rs[holderOfEnv(rs, "devel")].d, "devel") // timed once the patch's answer is back
	pushed := time.Since(start)
	t.Logf("push to a replica not holding devel: patched in %v", pushed)
	// The holder, woken by the push, timed it to its patch.
	if n, sum := webhookToPatch(t, rs[holderOfEnv(rs, "devel")].d, "devel"); n != 1 || sum > pushed.Seconds() {
		t.Errorf("devel's holder: stagehand_webhook_to_patch_seconds has %d observations summing %vs, want 1 within %v", n, sum, pushed)
	}

	// The replica holding prod dies, with prod's plan approved and half
	// applied (in flight, as a kill mid-apply leaves it).
	vi := holderOfEnv(rs, "prod")
	victim := rs[vi]
	p := victim.waitPending(t, "prod", proposed)
	lost := victim.d.Held()
	var plan struct{ Changes json.RawMessage }
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	victim.stop()
	killed := time.Now()
	if err := state.NewStore(cluster.Env(t).Clientset, h.stateNS).SetInFlight(context.Background(), "prod",
		&approval.InFlight{Revision: p.Revision, PlanHash: p.PlanHash, Approver: "carol", Changes: plan.Changes, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	survivors := slices.Delete(slices.Clone(rs), vi, vi+1)
	waitHeld(t, survivors, len(sixEnvs))
	took := time.Since(killed)
	t.Logf("environments %v handed over in %v (lease duration %v)", lost, took, shardElection().LeaseDuration)
	if limit := 2 * shardElection().LeaseDuration; took > limit {
		t.Errorf("hand-over took %v, more than %v", took, limit)
	}
	for _, r := range survivors {
		if n := len(r.d.Held()); n > 3+1 {
			t.Errorf("%s holds %v, more than its share 3 + 1", r.d.o.identity, r.d.Held())
		}
	}
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 20*time.Second, "prod's continued apply recorded", func() bool {
		hist = survivors[0].history(t, "prod")
		return len(hist) == 1
	})
	if hist[0].Approver != "carol" || hist[0].Result != approval.ResultSucceeded {
		t.Errorf("prod's continued apply recorded as %+v, want approver carol, succeeded", hist[0])
	}
	// The dead replica's other environments: their pending plans are
	// approved through a replica that may not hold them, and applied once.
	for _, env := range lost {
		if env == "prod" || env == "devel" {
			continue
		}
		via := survivors[(holderOfEnv(survivors, env)+1)%len(survivors)]
		p := via.waitPending(t, env, proposed)
		if code, b := via.call(t, "POST", "/api/v1/environments/"+env+"/approve", testToken, api.DecisionRequest{PlanHash: p.PlanHash}); code != http.StatusAccepted {
			t.Fatalf("approve %s: %d %s", env, code, b)
		}
		waitImage(t, h.ns[env], "web", imageRepo+"web:1.0.0")
		testenv.WaitFor(t, 20*time.Second, env+" apply recorded", func() bool { return len(via.history(t, env)) == 1 })
	}
	for _, env := range lost {
		want := float64(len(survivors[0].history(t, env)))
		if got := applied(t, rs, env); got != want {
			t.Errorf("%s: %v changes applied over all replicas, want %v (one per apply recorded)", env, got, want)
		}
	}
}

// pausable hangs every request to Leases while paused, as a replica that
// stopped (a long GC pause, SIGSTOP, a partition) would look to the others:
// its Lease renewals stop, the rest of it goes on once it resumes.
type pausable struct {
	mu     sync.Mutex
	paused chan struct{} // closed when resumed; nil when running
}

// wrap makes rt's requests to Leases pausable by p.
func (p *pausable) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		p.mu.Lock()
		ch := p.paused
		p.mu.Unlock()
		if ch != nil && strings.Contains(req.URL.Path, "/leases") {
			select {
			case <-ch:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = make(chan struct{})
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.paused)
	p.paused = nil
}

// TestFencedStateWrites: replica A holds devel and pauses (its Lease
// renewals hang); B takes devel over and works it. A push reaching A makes
// its worker plan and try to record and apply the new revision: the writes
// are refused (B's term claimed the state), A stops working devel at once,
// though its lease loop is still stuck, and applies nothing; B applies the
// revision, once. When A resumes it does not take devel back.
func TestFencedStateWrites(t *testing.T) {
	h := newHarness(t, "devel")
	h.cfg.LeaderElection.PerEnvironment = true
	h.cfg.Source.Interval = config.Duration{Duration: 10 * time.Minute}
	cfg := rest.CopyConfig(cluster.Env(t).Config)
	p := &pausable{}
	cfg.Wrap(p.wrap)
	a := h.startWith([]wire.Option{wire.WithRESTConfig(cfg)}, WithIdentity("replica-a"), WithLeaderElection(shardElection()))
	testenv.WaitFor(t, 20*time.Second, "a to hold devel", func() bool { return slices.Contains(a.d.Held(), "devel") })
	b := h.start(WithIdentity("replica-b"), WithLeaderElection(shardElection()))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 20*time.Second, "the first apply recorded", func() bool { return len(a.history(t, "devel")) == 1 })

	p.pause()
	testenv.WaitFor(t, 20*time.Second, "b to take devel over", func() bool { return slices.Contains(b.d.Held(), "devel") })
	if !slices.Contains(a.d.Held(), "devel") {
		t.Fatal("a stopped holding devel while paused; the test wants it unaware")
	}
	stateFailures := metricValue(t, a.d.metrics, "stagehand_failures_total", "environment=devel", "stage=state")
	h.commit("devel", true, map[string]string{"web": "2.0.0"})
	a.push(t, h, "push-to-paused")
	testenv.WaitFor(t, 20*time.Second, "a to stop working devel", func() bool { return !slices.Contains(a.d.Held(), "devel") })
	testenv.WaitFor(t, 30*time.Second, "a's refused state write counted", func() bool {
		return metricValue(t, a.d.metrics, "stagehand_failures_total", "environment=devel", "stage=state") > stateFailures
	})
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
	var hist []approval.Entry
	testenv.WaitFor(t, 20*time.Second, "b's apply recorded", func() bool { hist = b.history(t, "devel"); return len(hist) == 2 })
	if got := metricValue(t, a.d.metrics, "stagehand_changes_applied_total", "environment=devel"); got != 1 {
		t.Errorf("a applied %v changes, want 1 (the first revision only)", got)
	}
	if got := metricValue(t, b.d.metrics, "stagehand_changes_applied_total", "environment=devel"); got != 1 {
		t.Errorf("b applied %v changes, want 1", got)
	}
	cm, err := cluster.Env(t).Clientset.CoreV1().ConfigMaps(h.stateNS).Get(context.Background(), state.ConfigMapName("devel"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok := cm.Annotations[annoFence]; !strings.HasSuffix(tok, "/replica-b") {
		t.Errorf("devel's state is claimed by %q, want b's term", tok)
	}

	p.resume()
	time.Sleep(2 * shardElection().LeaseDuration) // a's loop runs again: it must not take devel back
	if slices.Contains(a.d.Held(), "devel") || !slices.Contains(b.d.Held(), "devel") {
		t.Errorf("after a resumed: a holds %v, b holds %v; want devel with b", a.d.Held(), b.d.Held())
	}
	if n := len(b.history(t, "devel")); n != 2 {
		t.Errorf("devel history has %d entries, want 2", n)
	}
}

// BenchmarkEnvironmentHandover measures, with leaderElection.perEnvironment
// and two replicas over two environments, how long devel goes unheld when
// its holder goes: killed (its Leases are left to expire; lease duration 3s,
// retry period 200ms) and shut down (it releases them). Each iteration
// starts a new replica in place of the one gone, untimed.
func BenchmarkEnvironmentHandover(b *testing.B) {
	for _, c := range []struct {
		name    string
		release bool
	}{{"killed", false}, {"released", true}} {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b, "devel", "prod")
			le := shardElection()
			le.ReleaseOnCancel = c.release
			rs := startShards(b, h, 2, WithLeaderElection(le))
			var lat []time.Duration
			for i := range b.N {
				vi := holderOfEnv(rs, "devel")
				start := time.Now()
				rs[vi].stop()
				rest := slices.Delete(slices.Clone(rs), vi, vi+1)
				for deadline := start.Add(30 * time.Second); holderOfEnv(rest, "devel") < 0; time.Sleep(2 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("iteration %d: devel not taken over within 30s", i)
					}
				}
				lat = append(lat, time.Since(start))
				b.StopTimer()
				rs = append(rest, h.start(WithIdentity(fmt.Sprintf("replica-%s-%d", c.name, i)), WithLeaderElection(le)))
				waitHeld(b, rs, 2)
				b.StartTimer()
			}
			b.StopTimer()
			reportLatency(b, lat, 0.95)
		})
	}
}
