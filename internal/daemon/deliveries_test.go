package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

func sumOf(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

// TestDeliveryRecord: state.Deliveries on the real API server (the state's
// tests are pure: its tests on a cluster are the daemon's), a delivery is new once, to
// whichever replica (each its own deliveryLog and client) asks; its ID or
// its body's sum seen again is not new; the record keeps the newest max,
// and keeps an over-long ID as its hash.
func TestDeliveryRecord(t *testing.T) {
	ctx := context.Background()
	env := cluster.Env(t)
	ns := env.Namespace(t)
	replica := func() *state.Deliveries {
		return state.NewDeliveries(kubernetes.NewForConfigOrDie(env.Config), ns, 3)
	}
	a, b := replica(), replica()
	steps := []struct {
		name string
		log  *state.Deliveries
		d    approval.Delivery
		want bool
	}{
		{"first", a, approval.Delivery{ID: "d1", Sum: sumOf("click 1")}, true},
		{"the same on the other replica", b, approval.Delivery{ID: "d1", Sum: sumOf("click 1")}, false},
		{"the same ID, another body", a, approval.Delivery{ID: "d1", Sum: sumOf("click 1, re-encoded")}, false},
		{"the same body under another ID", b, approval.Delivery{ID: "d1-replayed", Sum: sumOf("click 1")}, false},
		{"the same body without an ID", b, approval.Delivery{Sum: sumOf("click 1")}, false},
		{"another click", b, approval.Delivery{ID: "d2", Sum: sumOf("click 2")}, true},
		{"another click without an ID", a, approval.Delivery{Sum: sumOf("click 3")}, true},
		{"a fourth pushes the first out", a, approval.Delivery{ID: strings.Repeat("x", 10<<10), Sum: sumOf("click 4")}, true},
		{"the first is forgotten", b, approval.Delivery{ID: "d1", Sum: sumOf("click 1")}, true},
		{"the long ID, kept as its hash", b, approval.Delivery{ID: strings.Repeat("x", 10<<10), Sum: sumOf("click 5")}, false},
	}
	for _, s := range steps {
		got, err := s.log.First(ctx, s.d)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want {
			t.Errorf("%s: first = %v, want %v", s.name, got, s.want)
		}
	}
	forgotten := approval.Delivery{ID: "d2", Sum: sumOf("click 2")}
	if err := a.Forget(ctx, forgotten); err != nil {
		t.Fatal(err)
	}
	if got, err := b.First(ctx, forgotten); err != nil || !got {
		t.Errorf("a forgotten delivery again: first = %v, %v; want new", got, err)
	}
	if _, err := a.First(ctx, approval.Delivery{ID: "d9", Sum: "not a sum"}); err == nil || !strings.Contains(err.Error(), `sum "not a sum"`) {
		t.Errorf("a malformed sum: %v, want refused naming it", err)
	}
	cm, err := env.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, state.DeliveriesConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range cm.Data {
		n += len(v)
	}
	if n > 1000 {
		t.Errorf("the record of 3 deliveries is %d bytes: an over-long ID was kept as it is", n)
	}
}

// TestDeliveryRecordRace: the same delivery handed to two replicas at
// once is new to exactly one of them (the write's resourceVersion
// precondition), for each of several deliveries.
func TestDeliveryRecordRace(t *testing.T) {
	ctx := context.Background()
	env := cluster.Env(t)
	ns := env.Namespace(t)
	logs := []*state.Deliveries{
		state.NewDeliveries(kubernetes.NewForConfigOrDie(env.Config), ns, 0),
		state.NewDeliveries(kubernetes.NewForConfigOrDie(env.Config), ns, 0),
	}
	const n = 5
	wins := make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		d := approval.Delivery{ID: fmt.Sprint("race-", i), Sum: sumOf(fmt.Sprint("click ", i))}
		for _, l := range logs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first, err := l.First(ctx, d)
				if err != nil {
					t.Error(err)
					return
				}
				if first {
					mu.Lock()
					wins[i]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if diff := cmp.Diff([]int{1, 1, 1, 1, 1}, wins); diff != "" {
		t.Errorf("replicas that found each delivery new (-want +got):\n%s", diff)
	}
}
