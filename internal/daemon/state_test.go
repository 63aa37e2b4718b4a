package daemon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

func TestStoreRoundTrip(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	s := state.NewStore(env.Clientset, ns)
	now := time.Now().UTC().Truncate(time.Second)

	empty, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&state.EnvState{Phase: status.PhaseIdle}, empty); diff != "" {
		t.Errorf("state of an unknown environment (-want +got):\n%s", diff)
	}

	p := &approval.Pending{Revision: "abc", PlanHash: "h1", Plan: json.RawMessage(`{"planHash":"h1"}`), ProposedAt: now}
	if err := s.SetPending(ctx, "prod", p); err != nil {
		t.Fatal(err)
	}
	f := &approval.InFlight{Revision: "abc", PlanHash: "h1", Approver: "alice", Changes: json.RawMessage(`[]`), Started: now}
	if err := s.SetInFlight(ctx, "prod", f); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx, "prod", json.RawMessage(`{"revision":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	e := approval.Entry{Revision: "abc", PlanHash: "h1", Changes: json.RawMessage(`[]`), Approver: "alice",
		Result: approval.ResultSucceeded, Started: now, Finished: now.Add(time.Second)}
	if id, err := s.Record(ctx, "prod", e); err != nil || id != 1 {
		t.Fatalf("Record = %d, %v; want the first ID, 1", id, err)
	}
	e.ID = 1
	// A second store (another replica, or after a restart) sees the same.
	got, err := state.NewStore(env.Clientset, ns).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := &state.EnvState{Phase: status.PhaseIdle, History: []approval.Entry{e}, Status: json.RawMessage(`{"revision":"abc"}`), LastID: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state after Record (-want +got):\n%s", diff)
	}
	cm, err := env.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, "stagehand-state-prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[state.LabelManagedBy] != "stagehand" {
		t.Errorf("labels = %v, want %s=stagehand", cm.Labels, state.LabelManagedBy)
	}
}

func TestStoreRecordKeepsOtherPending(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, env.Namespace(t))
	newer := &approval.Pending{Revision: "def", PlanHash: "h2", Plan: json.RawMessage(`{}`)}
	if err := s.SetPending(ctx, "prod", newer); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, "prod", approval.Entry{Revision: "abc", PlanHash: "h1", Result: approval.ResultSucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(newer, got.Pending); diff != "" {
		t.Errorf("pending after recording another plan (-want +got):\n%s", diff)
	}
}

func TestStoreHistoryBounded(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, env.Namespace(t), state.WithHistoryLimit(5))
	// Random bytes: compressed, each entry still takes about 230 KiB.
	noise := make([]byte, 225<<10)
	for i := range noise {
		noise[i] = byte(rand.Uint32())
	}
	big := json.RawMessage(`"` + base64.StdEncoding.EncodeToString(noise) + `"`)
	for i := range 8 {
		e := approval.Entry{Revision: fmt.Sprint(i), PlanHash: fmt.Sprint(i), Result: approval.ResultSucceeded, Changes: big}
		if _, err := s.Record(ctx, "devel", e); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	got, err := s.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, e := range got.History {
		revs = append(revs, e.Revision)
	}
	// Only three fit under maxStateBytes; newest first.
	if diff := cmp.Diff([]string{"7", "6", "5"}, revs); diff != "" {
		t.Errorf("history revisions (-want +got):\n%s", diff)
	}
}

// TestStoreHasHandover: the leader's cheap per-second look finds a handover
// (with a short or a long reason), and finds none in a state without one or
// in no state at all.
func TestStoreHasHandover(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, ns)
	has := func(want bool) {
		t.Helper()
		got, err := s.HasHandover(ctx, "prod")
		if err != nil || got != want {
			t.Fatalf("HasHandover = %v, %v; want %v", got, err, want)
		}
	}
	has(false)
	if err := s.SetPending(ctx, "prod", &approval.Pending{Revision: "r", PlanHash: "sha256:p"}); err != nil {
		t.Fatal(err)
	}
	has(false)
	for _, reason := range []string{"short", strings.Repeat("a long reason, ", 2000)} {
		if err := s.Update(ctx, "prod", func(st *state.EnvState) {
			st.Handovers = []state.Handover{{PlanHash: "sha256:p", Approver: "bob", Reason: reason, At: time.Now()}}
		}); err != nil {
			t.Fatal(err)
		}
		has(true)
		if err := s.Update(ctx, "prod", func(st *state.EnvState) { st.Handovers = nil }); err != nil {
			t.Fatal(err)
		}
		has(false)
	}
}
