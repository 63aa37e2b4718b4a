package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestMixedElectionModes: replicas with different
// leaderElection.perEnvironment settings (a rolling change of the setting)
// never work an environment at the same time, whichever starts first: the
// replica without it leads every environment, the one with it stands by,
// takes pushes (waking the leader) and takes the environments over when the
// other goes.
func TestMixedElectionModes(t *testing.T) {
	for _, shardedFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("shardedFirst=%v", shardedFirst), func(t *testing.T) {
			h := newHarness(t, "devel", "prod")
			startGlobal := func() *running {
				c := *h.cfg
				c.LeaderElection.PerEnvironment = false
				hh := *h
				hh.cfg = &c
				return hh.start(WithIdentity("replica-global"), WithLeaderElection(shardElection()))
			}
			h.cfg.LeaderElection.PerEnvironment = true
			var global, sharded *running
			if shardedFirst {
				sharded = h.start(WithIdentity("replica-sharded"), WithLeaderElection(shardElection()))
				waitHeld(t, []*running{sharded}, 2)
				global = startGlobal()
			} else {
				global = startGlobal()
				testenv.WaitFor(t, 20*time.Second, "the global replica to lead", global.d.Leading)
				sharded = h.start(WithIdentity("replica-sharded"), WithLeaderElection(shardElection()))
			}
			both := func() {
				t.Helper()
				if held := sharded.d.Held(); len(held) > 0 && global.d.Leading() {
					t.Fatalf("the sharded replica holds %v while the global replica leads", held)
				}
			}
			testenv.WaitFor(t, 20*time.Second, "the global replica to lead alone", func() bool {
				both()
				return global.d.Leading() && len(sharded.d.Held()) == 0
			})
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				both()
			}
			h.commit("devel", true, map[string]string{"web": "2.0.0"})
			sharded.push(t, h, "push-to-sharded")
			waitImage(t, h.ns["devel"], "web", imageRepo+"web:2.0.0")
			global.stop()
			waitHeld(t, []*running{sharded}, 2)
		})
	}
}
