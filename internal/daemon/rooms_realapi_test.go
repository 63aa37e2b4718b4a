package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestRoomsWriteUnderTheWorkersTermRealAPI is TestRoomsWriteUnderTheWorkersTerm
// on the real API server: the worker's store is replaced by a new term's
// (another namespace here), and the rooms it drives write there only.
func TestRoomsWriteUnderTheWorkersTermRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	firstNS, secondNS := env.Namespace(t), env.Namespace(t)
	m := meter.New(nil)
	w := newWorker(workerDeps{env: "prod", store: pass.Observed(state.NewStore(env.Clientset, firstNS), m, "prod"), gate: approval.Manual(),
		metrics: m, log: logr.Discard(), now: time.Now, reportBackoff: time.Second, reportBackoffMax: time.Minute})
	w.store = pass.Observed(state.NewStore(env.Clientset, secondNS), m, "prod") // a new term

	prop := approval.Proposal{Environment: "prod", Revision: "r1", Plan: &reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:01"}}
	w.seq.Begin(ctx, delivery.Start{Prop: prop, Tasks: []promote.Task{{Name: promote.TaskDeployment}}, Save: true})
	w.owed.Owe(ctx, outbox.Superseded(prop, "r2"), errors.New("502 Bad Gateway"))

	st, err := state.NewStore(env.Clientset, secondNS).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if st.Sequence == nil || len(st.Unreported) != 1 {
		t.Errorf("the new term's store holds run %v and %d unreported; want the run and 1", st.Sequence, len(st.Unreported))
	}
	old, err := state.NewStore(env.Clientset, firstNS).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if old.Sequence != nil || len(old.Unreported) != 0 {
		t.Errorf("the old term's store was written: run %v, %d unreported", old.Sequence, len(old.Unreported))
	}
}

// TestStateWritesCountedRealAPI is internal/state's TestWritesCounted on the
// real API server: stagehand_state_writes_total counts each Update and Claim
// by its result, and a write of an earlier term refused by the later term's
// fence is failed.
func TestStateWritesCountedRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, env.Namespace(t))
	mine, later := state.FenceToken(1, "replica-a"), state.FenceToken(2, "replica-b")

	if err := s.Update(ctx, "devel", func(st *state.EnvState) { st.Status = []byte(`{}`) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "prod", mine); err != nil {
		t.Fatal(err)
	}
	a := s.Fenced(mine, func() {})
	if err := a.Update(ctx, "prod", func(st *state.EnvState) { st.Status = []byte(`{}`) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "prod", later); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, "prod", func(st *state.EnvState) { st.Status = []byte(`{"x":1}`) }); err == nil {
		t.Fatal("a write of an earlier term succeeded over a later term's state")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := ""
			for _, l := range mt.GetLabel() {
				key += l.GetValue() + " "
			}
			got[key] = mt.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"devel written ": 1,
		"prod written ":  3, // two claims and the fenced write
		"prod failed ":   1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stagehand_state_writes_total (-want +got):\n%s", diff)
	}
}
