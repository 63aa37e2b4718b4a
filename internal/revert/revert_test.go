package revert

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

type memStore struct{ st state.EnvState }

func (m *memStore) Update(_ context.Context, _ string, mutate func(*state.EnvState)) error {
	mutate(&m.st)
	return nil
}

func (m *memStore) HistoryLimit() int { return 50 }

// heard is what the reverter told its hooks.
type heard struct {
	restoredTo string
	completed  []string
	hook       []string
	failed     []Failure
	moved      int
}

func newReverter(store *memStore, h *heard, restore func() (*reconcile.Result, error)) *Reverter {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	return New(Config{Env: "prod", Store: store, Now: func() time.Time { return now }, Log: logr.Discard(),
		Restore: func(_ context.Context, req reconcile.Request, _ reconcile.Undo, _ ...reconcile.Option) (*reconcile.Result, error) {
			h.restoredTo = req.Revision
			return restore()
		},
		Grace: func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(ctx) },
		Completed: func(_ context.Context, _ approval.Proposal, out approval.Outcome) {
			h.completed = append(h.completed, out.Result)
		},
		Hook: func(_ context.Context, env string, _ int64, cause string) error {
			h.hook = append(h.hook, env+": "+cause)
			return nil
		},
		Failed: func(f Failure) { h.failed = append(h.failed, f) },
		Moved:  func() { h.moved++ }})
}

func failedEntry(t *testing.T) approval.Entry {
	t.Helper()
	changes, err := json.Marshal([]reconcile.Change{{Service: "web", Container: "web", From: "1.0.0", To: "2.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	return approval.Entry{Revision: "r2", PlanHash: "sha256:02", Changes: changes, Result: approval.ResultFailed}
}

// TestStart: a failed apply is rolled back to the revision applied before
// it, recorded as rolled back with the failed revision in one write, the
// gate and the hook told once; a restore that fails is recorded and counted.
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		restore    func() (*reconcile.Result, error)
		wantMsg    string
		wantFailed []Failure
	}{
		{name: "restored", restore: func() (*reconcile.Result, error) {
			return &reconcile.Result{Workloads: []reconcile.WorkloadResult{{Outcome: reconcile.OutcomeSucceeded}}}, nil
		}, wantMsg: "rollout failed: web; rolled back 1 workload(s) to the images before"},
		{name: "restore failed", restore: func() (*reconcile.Result, error) { return nil, errors.New("forbidden") },
			wantMsg:    "rollout failed: web; rolling back failed, the workloads may still run the new images: forbidden",
			wantFailed: []Failure{FailedRollback}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{st: state.EnvState{Phase: status.PhaseApplying,
				InFlight: &approval.InFlight{Revision: "r2", PlanHash: "sha256:02"},
				Pending:  &approval.Pending{Revision: "r2", PlanHash: "sha256:03"},
				History:  []approval.Entry{{ID: 2, Revision: "r2", Result: approval.ResultInterrupted}, {ID: 1, Revision: "r1", Result: approval.ResultSucceeded}}}}
			h := &heard{}
			if err := newReverter(store, h, tc.restore).Start(context.Background(), failedEntry(t), "rollout failed: web"); err != nil {
				t.Fatal(err)
			}
			st := store.st
			if h.restoredTo != "r1" {
				t.Errorf("restored to %q; want r1, the revision applied before r2", h.restoredTo)
			}
			if st.Phase != status.PhaseFailed || st.InFlight != nil || st.Rollback != nil || st.Pending != nil || st.Failed == nil || st.Failed.Revision != "r2" {
				t.Errorf("state after: phase %q, in flight %v, rollback %v, pending %v, failed %+v; want failed r2 and nothing else",
					st.Phase, st.InFlight, st.Rollback, st.Pending, st.Failed)
			}
			if e := st.History[0]; e.Result != approval.ResultRolledBack || e.Message != tc.wantMsg || e.ID != st.Failed.EntryID {
				t.Errorf("newest entry: %s %q (id %d); want rolled back %q, the id failed names", e.Result, e.Message, e.ID, tc.wantMsg)
			}
			if diff := cmp.Diff(&heard{restoredTo: "r1", completed: []string{approval.ResultRolledBack},
				hook: []string{"prod: rollout failed: web"}, failed: tc.wantFailed, moved: 1}, h, cmp.AllowUnexported(heard{})); diff != "" {
				t.Errorf("heard (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContinueRecordedElsewhere: a rollback another replica recorded
// already (the state holds none, or another) is not recorded or reported
// again; one cut short by a shutdown stays for the next leader.
func TestContinueRecordedElsewhere(t *testing.T) {
	e := failedEntry(t)
	rb := state.Rollback{Entry: e, Cause: "verification failed", At: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)}
	store, h := &memStore{}, &heard{}
	ok := func() (*reconcile.Result, error) { return &reconcile.Result{}, nil }
	if err := newReverter(store, h, ok).Continue(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	if len(store.st.History) != 0 || len(h.completed) != 0 || len(h.hook) != 0 {
		t.Errorf("recorded %v, reported %v, hook %v; want nothing: someone else recorded it", store.st.History, h.completed, h.hook)
	}

	store = &memStore{st: state.EnvState{Rollback: &rb, Phase: status.PhaseRollingBack}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newReverter(store, h, ok).Continue(ctx, rb); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Continue after shutdown: %v; want the shutdown", err)
	}
	if store.st.Rollback == nil || store.st.Phase != status.PhaseRollingBack {
		t.Errorf("the rollback was not left for the next leader: %+v", store.st)
	}
}
