package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestRoomsWriteUnderTheWorkersTerm: the rooms a worker drives (its
// delivery.Run and outbox.Queue) write through the worker's store as it is
// at each write, not as it was when the worker was made: each term fences
// it anew (Daemon.work), and a write under an old term's store would be
// neither fenced nor seen. Pure: two stores on fake clientsets.
func TestRoomsWriteUnderTheWorkersTerm(t *testing.T) {
	ctx := context.Background()
	first, second := fake.NewClientset(), fake.NewClientset()
	m := meter.New(nil)
	w := newWorker(workerDeps{env: "prod", store: pass.Observed(state.NewStore(first, "stagehand"), m, "prod"), gate: approval.Manual(),
		metrics: m, log: logr.Discard(), now: time.Now, reportBackoff: time.Second, reportBackoffMax: time.Minute})
	w.store = pass.Observed(state.NewStore(second, "stagehand"), m, "prod") // a new term

	prop := approval.Proposal{Environment: "prod", Revision: "r1", Plan: &reconcile.Plan{Environment: "prod", Revision: "r1", PlanHash: "sha256:01"}}
	w.seq.Begin(ctx, delivery.Start{Prop: prop, Tasks: []promote.Task{{Name: promote.TaskDeployment}}, Save: true})
	w.owed.Owe(ctx, outbox.Superseded(prop, "r2"), errors.New("502 Bad Gateway"))

	st, err := state.NewStore(second, "stagehand").Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if st.Sequence == nil || len(st.Unreported) != 1 {
		t.Errorf("the new term's store holds run %v and %d unreported; want the run and 1", st.Sequence, len(st.Unreported))
	}
	old, err := state.NewStore(first, "stagehand").Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if old.Sequence != nil || len(old.Unreported) != 0 {
		t.Errorf("the old term's store was written: run %v, %d unreported", old.Sequence, len(old.Unreported))
	}
}
