package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/view"
)

// TestViewsRealAPI is internal/view's TestUnknownEnvironment and
// TestEmptyEnvironment on the real API server (internal/view starts no
// control plane), and a recorded entry read back through the views: an
// environment not configured is refused on every read; one with no state
// reads idle with an empty history; an entry the store recorded is read by
// its id, and an id never recorded is unknown.
func TestViewsRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	st := state.NewStore(env.Clientset, env.Namespace(t))
	cfg := &config.Config{Environments: map[string]config.Environment{"prod": {}}}
	v := view.New(view.Config{Config: cfg, Store: st, Clock: clock.NewRemote(time.Now)})

	_, envErr := v.Environment(ctx, "nope")
	_, histErr := v.History(ctx, "nope")
	_, entryErr := v.HistoryEntry(ctx, "nope", 1)
	for name, err := range map[string]error{"Environment": envErr, "History": histErr, "HistoryEntry": entryErr} {
		if !errors.Is(err, approval.ErrUnknownEnvironment) {
			t.Errorf("%s of an unknown environment = %v, want ErrUnknownEnvironment", name, err)
		}
	}

	got, err := v.Environment(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "prod" || len(got.History) != 0 || len(got.Services) != 0 || got.Pending != nil || got.Holder != "" {
		t.Errorf("prod with no state = %+v; want idle, nothing recorded", got)
	}
	if h, err := v.History(ctx, "prod"); err != nil || h == nil || len(h) != 0 {
		t.Errorf("history = %#v, %v; want an empty list", h, err)
	}

	id, err := st.Record(ctx, "prod", approval.Entry{Revision: "abcdef0123456789", PlanHash: "sha256:01",
		Approver: "github:alice", Result: approval.ResultSucceeded, Started: time.Now().UTC(), Finished: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := v.HistoryEntry(ctx, "prod", id)
	if err != nil || e.PlanHash != "sha256:01" || e.Approver != "github:alice" {
		t.Errorf("entry %d = %+v, %v; want the recorded one", id, e, err)
	}
	if _, err := v.HistoryEntry(ctx, "prod", id+1); !errors.Is(err, approval.ErrUnknownEntry) {
		t.Errorf("entry %d = %v, want ErrUnknownEntry", id+1, err)
	}
}
