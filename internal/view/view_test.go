package view

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// views is the views of one environment, prod, over a fresh store.
func views(t *testing.T) (*Views, *state.Store) {
	t.Helper()
	cfg := &config.Config{Environments: map[string]config.Environment{"prod": {}}}
	st := state.NewStore(fake.NewClientset(), "stagehand")
	return New(Config{Config: cfg, Store: st, Clock: clock.NewRemote(time.Now)}), st
}

// TestUnknownEnvironment: every read of an environment not configured is
// refused with approval.ErrUnknownEnvironment, naming those configured.
func TestUnknownEnvironment(t *testing.T) {
	v, _ := views(t)
	ctx := context.Background()
	_, envErr := v.Environment(ctx, "nope")
	_, histErr := v.History(ctx, "nope")
	_, entryErr := v.HistoryEntry(ctx, "nope", 1)
	for name, err := range map[string]error{"Environment": envErr, "History": histErr, "HistoryEntry": entryErr} {
		if !errors.Is(err, approval.ErrUnknownEnvironment) {
			t.Errorf("%s of an unknown environment = %v, want ErrUnknownEnvironment", name, err)
		}
	}
}

// TestEmptyEnvironment: an environment nothing was recorded for reads as
// idle with an empty history (never null), no services and no locks, and
// an entry of it is unknown.
func TestEmptyEnvironment(t *testing.T) {
	v, _ := views(t)
	ctx := context.Background()
	got, err := v.Environment(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		Name                    string
		History                 []approval.Entry
		Services                []status.Service
		LocksNil, Held, Pending bool
	}
	want := shown{Name: "prod", Services: []status.Service{}}
	if diff := cmp.Diff(want, shown{Name: got.Name, History: got.History, Services: got.Services,
		LocksNil: got.Locks == nil || len(got.Locks) != 0, Held: got.Holder != "", Pending: got.Pending != nil}); diff != "" {
		t.Errorf("view (-want +got):\n%s", diff)
	}
	h, err := v.History(ctx, "prod")
	if err != nil || h == nil || len(h) != 0 {
		t.Errorf("history = %#v, %v; want an empty list", h, err)
	}
	if _, err := v.HistoryEntry(ctx, "prod", 1); !errors.Is(err, approval.ErrUnknownEntry) {
		t.Errorf("entry 1 = %v, want ErrUnknownEntry", err)
	}
}
