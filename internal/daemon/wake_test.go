package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wake"
)

// startPair starts two replicas of h with a 10-minute poll interval, waits
// for the first apply of devel and returns the leader and the standby.
func startPair(t testing.TB, h *harness) (leader, standby *running) {
	t.Helper()
	h.cfg.Source.Interval = config.Duration{Duration: 10 * time.Minute}
	a := h.start(WithIdentity("replica-a"))
	b := h.start(WithIdentity("replica-b"))
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.0.0")
	testenv.WaitFor(t, 30*time.Second, "first apply recorded", func() bool { return len(a.history(t, "devel")) == 1 })
	if a.d.Leading() == b.d.Leading() {
		t.Fatalf("leading: a=%v b=%v, want exactly one", a.d.Leading(), b.d.Leading())
	}
	if b.d.Leading() {
		return b, a
	}
	return a, b
}

// TestPushToStandby: a push webhook received by the replica that does not
// lead wakes the leader, which polls and applies at once, though the poll
// interval is 10 minutes; the wake-up is one annotation naming the standby.
func TestPushToStandby(t *testing.T) {
	h := newHarness(t, "devel")
	leader, standby := startPair(t, h)
	for i, to := range []*running{standby, standby, leader} {
		want := fmt.Sprintf("2.0.%d", i)
		h.commit("devel", true, map[string]string{"web": want})
		start := time.Now()
		to.push(t, h, fmt.Sprintf("push-%d", i))
		testenv.WaitFor(t, 30*time.Second, "devel to run web:"+want, func() bool {
			return cluster.Env(t).Image(t, h.ns["devel"], "web") == imageRepo+"web:"+want
		})
		t.Logf("push %d (to the %s) patched in %v", i, map[bool]string{true: "leader", false: "standby"}[to == leader], time.Since(start))
		testenv.WaitFor(t, 30*time.Second, "apply recorded", func() bool { return len(leader.history(t, "devel")) == i+2 })
	}
	cm, err := cluster.Env(t).Clientset.CoreV1().ConfigMaps(h.stateNS).Get(context.Background(), WakeConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("wake configmap: %v", err)
	}
	if v := cm.Annotations[wake.Annotation]; !strings.HasSuffix(v, " "+standby.d.o.identity) {
		t.Errorf("%s = %q, want a time and the standby's identity %q", wake.Annotation, v, standby.d.o.identity)
	}
	if len(cm.Data) != 0 || cm.Labels[state.LabelManagedBy] != "stagehand" {
		t.Errorf("wake configmap: data %v, labels %v; want no data, managed by stagehand", cm.Data, cm.Labels)
	}
	if len(leader.history(t, "devel")) != 4 || standby.d.Leading() {
		t.Errorf("history %d entries, standby leading %v; want 4 and false", len(leader.history(t, "devel")), standby.d.Leading())
	}
	// The leader goes; the standby takes over and watches in its turn: a
	// push to a new standby reaches it.
	leader.stop()
	testenv.WaitFor(t, 20*time.Second, "the standby to lead", standby.d.Leading)
	third := h.start(WithIdentity("replica-c"))
	testenv.WaitFor(t, 30*time.Second, "the third replica to be ready", func() bool { return third.d.ready.Load() })
	h.commit("devel", true, map[string]string{"web": "4.0.0"})
	third.push(t, h, "push-after-failover")
	testenv.WaitFor(t, 30*time.Second, "devel to run web:4.0.0 after a push to the new standby", func() bool {
		return cluster.Env(t).Image(t, h.ns["devel"], "web") == imageRepo+"web:4.0.0"
	})
	if third.d.Leading() {
		t.Error("the third replica leads; want the second")
	}
}

// BenchmarkWebhookToPatchReplicas measures BenchmarkWebhookToPatch's path
// with two replicas and a 10-minute poll interval: the push webhook sent to
// the leader, and sent to the standby (which wakes the leader through the
// wake ConfigMap). Target: standby p50 < 300ms.
func BenchmarkWebhookToPatchReplicas(b *testing.B) {
	h := newHarness(b, "devel")
	leader, standby := startPair(b, h)
	n := 0
	for _, c := range []struct {
		name string
		to   *running
	}{{"leader", leader}, {"standby", standby}} {
		b.Run(c.name, func(b *testing.B) {
			var lat []time.Duration
			for range b.N {
				n++
				want := fmt.Sprintf("%sweb:3.0.%d", imageRepo, n)
				rev := h.commit("devel", true, map[string]string{"web": fmt.Sprintf("3.0.%d", n)})
				start := time.Now()
				c.to.push(b, h, fmt.Sprintf("bench-%s-%d", c.name, n))
				deadline := start.Add(30 * time.Second)
				for cluster.Env(b).Image(b, h.ns["devel"], "web") != want {
					if time.Now().After(deadline) {
						b.Fatalf("%s not patched within 30s", want)
					}
					time.Sleep(2 * time.Millisecond)
				}
				lat = append(lat, time.Since(start))
				b.StopTimer()
				leader.waitRecorded(b, "devel", rev)
				b.StartTimer()
			}
			b.StopTimer()
			reportLatency(b, lat, 0.95)
		})
	}
	if standby.d.Leading() {
		b.Fatal("the standby took over during the benchmark")
	}
}
