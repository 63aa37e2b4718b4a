package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/state"
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

// TestWaitEnvLeasesForbidden: an elected leader whose ServiceAccount may
// not list Leases (an RBAC of its own, older than perEnvironment) leads at
// once instead of waiting forever: no replica could hold an environment
// under it. On the real API server with RBAC: the daemon's state client
// acts as a user with no rights at all, so its list is really forbidden.
func TestWaitEnvLeasesForbidden(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "stagehand-without-rbac"}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Leases as a user without rights = %v, want forbidden", err)
	}
	d := &Daemon{store: state.NewStore(client, ns), log: logr.Discard(),
		o: options{identity: "me", election: LeaderElection{Enable: true, LeaseDuration: time.Hour, RetryPeriod: time.Hour}}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := d.waitEnvLeases(ctx); err != nil {
		t.Fatalf("waitEnvLeases = %v, want nil at once", err)
	}
}
