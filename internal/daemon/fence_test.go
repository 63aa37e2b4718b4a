package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// annoFence and labelStateOf are the annotation and label internal/state
// writes: a fence's term on the state ConfigMap, and the state a part is of.
const (
	annoFence    = "stagehand.io/fence"
	labelStateOf = "stagehand.io/state-of"
)

// TestStoreFence: a replica writing under an old term is refused once a
// later term claimed the state, told so once (lost), and what the new
// holder wrote stays; an old term cannot claim the state back; a write that
// takes no term (a decision handed over by any replica) is not fenced.
func TestStoreFence(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	base := state.NewStore(env.Clientset, ns)
	lostA := 0
	a := base.Fenced(state.FenceToken(1, "a"), func() { lostA++ })
	b := base.Fenced(state.FenceToken(2, "b"), nil)

	if _, err := a.Claim(ctx, "prod", state.FenceToken(1, "a")); err != nil {
		t.Fatalf("a claims: %v", err)
	}
	if err := a.SetPending(ctx, "prod", &approval.Pending{Revision: "r1", PlanHash: "from-a"}); err != nil {
		t.Fatalf("a writes in its term: %v", err)
	}
	prev, err := b.Claim(ctx, "prod", state.FenceToken(2, "b"))
	if err != nil || prev != 1 {
		t.Fatalf("b claims: previous term %d, %v; want 1, nil", prev, err)
	}
	if err := b.SetPending(ctx, "prod", &approval.Pending{Revision: "r2", PlanHash: "from-b"}); err != nil {
		t.Fatalf("b writes in its term: %v", err)
	}
	for i := range 2 {
		err := a.SetPending(ctx, "prod", &approval.Pending{Revision: "r3", PlanHash: "from-a-late"})
		if !errors.Is(err, state.ErrFenced) {
			t.Fatalf("a writes after b claimed (%d): %v, want state.ErrFenced", i, err)
		}
	}
	if lostA != 1 {
		t.Errorf("a was told %d times it lost the state, want once", lostA)
	}
	if _, err := a.Claim(ctx, "prod", state.FenceToken(1, "a")); !errors.Is(err, state.ErrFenced) {
		t.Errorf("a claims back in its old term: %v, want state.ErrFenced", err)
	}
	// A decision handed over by a replica that holds nothing is no term's write.
	if err := base.Update(ctx, "prod", func(st *state.EnvState) { st.Handovers = []state.Handover{{Approve: true, PlanHash: "from-b"}} }); err != nil {
		t.Fatalf("handover write: %v", err)
	}
	st, err := base.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := &state.EnvState{Phase: status.PhaseAwaitingApproval, Pending: &approval.Pending{Revision: "r2", PlanHash: "from-b", Plan: json.RawMessage("null")}, Handovers: []state.Handover{{Approve: true, PlanHash: "from-b"}}}
	if diff := cmp.Diff(want, st, rawEqual); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	cm, err := env.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Annotations[annoFence]; got != state.FenceToken(2, "b") {
		t.Errorf("%s = %q, want b's term", annoFence, got)
	}
}

// TestOrphanPartsAgeByServerClock: a part no index names is deleted by a
// write once it is orphanAge old by the API server's clock, the time the
// server stamped on the index write (internal/state's TestDropParts shows
// that a replica's own clock, two hours ahead, deletes nothing): a part
// created just before a write is kept, and deleted by the writes after
// orphanAge.
func TestOrphanPartsAgeByServerClock(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	// A small budget splits the plan, so that the write looks for orphans.
	s := state.NewStore(env.Clientset, ns, state.WithMaxBytes(8<<10), state.WithOrphanAge(2*time.Second))
	name := state.ConfigMapName("prod")
	cms := env.Clientset.CoreV1().ConfigMaps(ns)
	orphan, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-pending-orphan-1",
		Labels: map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: "state-part", labelStateOf: name}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exists := func() bool {
		_, err := cms.Get(ctx, orphan.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	p, _ := statetest.BigState(t, "prod", 200, 3)
	if err := s.SetPending(ctx, "prod", p); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("a fresh orphan was deleted by the write right after it was created")
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; exists(); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the orphan was not deleted by writes after orphanAge")
		}
		time.Sleep(500 * time.Millisecond)
		p.PlanHash = p.PlanHash[:8] + string(rune('a'+i%26)) // a change, so the server stamps the write
		if err := s.SetPending(ctx, "prod", p); err != nil {
			t.Fatal(err)
		}
	}
}
