package state

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// writeCounts gathers stagehand_state_writes_total as "environment result" → value.
func writeCounts(t *testing.T, s *Store) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "stagehand_state_writes_total" {
			t.Errorf("unexpected metric %s", mf.GetName())
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["environment"]+" "+l["result"]] = m.GetCounter().GetValue()
		}
	}
	return got
}

// TestWritesCounted: stagehand_state_writes_total counts every Update and
// Claim by its result, on the Store and its Fenced copies alike: a write
// refused (a later term holds the state) is failed, a write whose context
// was cancelled (the process stops) is not counted.
func TestWritesCounted(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s := NewStore(client, "stagehand")
	mine, later := FenceToken(1, "replica-a"), FenceToken(2, "replica-b")

	if err := s.Update(ctx, "devel", func(st *EnvState) { st.Status = []byte(`{}`) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "prod", mine); err != nil {
		t.Fatal(err)
	}
	a := s.Fenced(mine, func() {})
	if err := a.Update(ctx, "prod", func(st *EnvState) { st.Status = []byte(`{}`) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "prod", later); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, "prod", func(st *EnvState) { st.Status = []byte(`{"x":1}`) }); err == nil {
		t.Fatal("a write of an earlier term succeeded over a later term's state")
	}
	// The process stops: the API calls end with the context's error.
	client.PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.Canceled
	})
	if err := s.Update(ctx, "devel", func(st *EnvState) { st.Status = []byte(`{"x":1}`) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose calls were cancelled: %v, want context.Canceled", err)
	}
	want := map[string]float64{
		"devel written": 1,
		"prod written":  3, // two claims and the fenced write
		"prod failed":   1,
	}
	if diff := cmp.Diff(want, writeCounts(t, s)); diff != "" {
		t.Errorf("stagehand_state_writes_total (-want +got):\n%s", diff)
	}
}
