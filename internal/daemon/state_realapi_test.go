package daemon

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// The state's pure tests (internal/state) run on client-go's fake clientset,
// whose tracker they teach resourceVersions; these show the same rules on the
// real API server: its optimistic concurrency, and a real ConfigMap carrying
// a newer schema.

// TestStoreUpdateFromSeenRealAPI: a Store writes over the ConfigMap as it
// last saw it; when another Store wrote since, the API server refuses the
// write (409) and the Update reads and writes again, so nothing the other
// wrote is lost.
func TestStoreUpdateFromSeenRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	s, other := state.NewStore(env.Clientset, ns), state.NewStore(env.Clientset, ns)
	record := func(s *state.Store, rev string) {
		t.Helper()
		if _, err := s.Record(ctx, "prod", approval.Entry{Revision: rev, Result: approval.ResultSucceeded}); err != nil {
			t.Fatalf("record %s: %v", rev, err)
		}
	}
	record(s, "r1")
	if _, err := s.Load(ctx, "prod"); err != nil {
		t.Fatal(err)
	}
	record(other, "r2") // s's copy is now stale
	record(s, "r3")
	if err := s.Update(ctx, "prod", func(st *state.EnvState) { st.Pending = &approval.Pending{Revision: "r4", PlanHash: "p4"} }); err != nil {
		t.Fatal(err)
	}
	st, err := state.NewStore(env.Clientset, ns).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, e := range st.History {
		revs = append(revs, e.Revision)
	}
	if diff := cmp.Diff([]string{"r3", "r2", "r1"}, revs); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if st.Pending == nil || st.Pending.PlanHash != "p4" {
		t.Errorf("pending = %+v, want p4", st.Pending)
	}
}

// TestStoreRefusesNewerSchemaRealAPI: a state ConfigMap whose schema.json
// says only a newer build may read it is refused by Load, Update, Record and
// Claim, and the ConfigMap is not written (its resourceVersion stays).
func TestStoreRefusesNewerSchemaRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	s := state.NewStore(env.Clientset, ns)
	if _, err := s.Record(ctx, "prod", approval.Entry{Revision: "r1", Result: approval.ResultSucceeded}); err != nil {
		t.Fatal(err)
	}
	cms := env.Clientset.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newer := state.SchemaVersion + 1
	cm.Data["schema.json"] = `{"version":` + strconv.Itoa(newer) + `,"oldestReader":` + strconv.Itoa(newer) + `}`
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	older := state.NewStore(env.Clientset, ns)
	_, loadErr := older.Load(ctx, "prod")
	updateErr := older.Update(ctx, "prod", func(st *state.EnvState) { st.Pending = nil })
	_, recordErr := older.Record(ctx, "prod", approval.Entry{Revision: "r2", Result: approval.ResultSucceeded})
	_, claimErr := older.Claim(ctx, "prod", state.FenceToken(1, "older")) // leaderElection.perEnvironment's term
	for name, err := range map[string]error{"Load": loadErr, "Update": updateErr, "Record": recordErr, "Claim": claimErr} {
		var se *state.SchemaError
		if !errors.As(err, &se) || se.Found != newer || se.Build != state.SchemaVersion {
			t.Errorf("%s: %v, want a SchemaError naming schema %d and this build's %d", name, err, newer, state.SchemaVersion)
		}
	}
	after, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != cm.ResourceVersion {
		t.Errorf("the older build wrote the newer state: resourceVersion %s → %s", cm.ResourceVersion, after.ResourceVersion)
	}
}

// TestStoreHoldsRealAPI: Holds says a fenced Store's term still holds the
// state until another term claims it on the API server.
func TestStoreHoldsRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	base := state.NewStore(env.Clientset, ns)
	mine := state.FenceToken(1, "a")
	a := base.Fenced(mine, nil)
	if _, err := a.Claim(ctx, "prod", mine); err != nil {
		t.Fatal(err)
	}
	if err := a.Holds(ctx, "prod"); err != nil {
		t.Fatalf("Holds in its own term: %v", err)
	}
	if _, err := base.Claim(ctx, "prod", state.FenceToken(2, "b")); err != nil {
		t.Fatal(err)
	}
	if err := a.Holds(ctx, "prod"); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("Holds after another term claimed: %v, want state.ErrFenced", err)
	}
}

// TestStoreClaimRealAPI: internal/state's TestClaim on the real API server:
// each claim returns the term before it, a claim of an older term is fenced
// and leaves the newer one, and a fenced Store's write after its claim stays.
func TestStoreClaimRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, env.Namespace(t))
	for i, step := range []struct {
		token    string
		wantPrev int64
		fenced   bool
		wantTerm int64
	}{
		{state.FenceToken(1, "a"), -1, false, 1},
		{state.FenceToken(1, "a"), 1, false, 1},
		{state.FenceToken(2, "b"), 1, false, 2},
		{state.FenceToken(1, "a"), 2, true, 2},
		{state.FenceToken(5, "a"), 2, false, 5},
	} {
		prev, err := s.Claim(ctx, "prod", step.token)
		if prev != step.wantPrev || errors.Is(err, state.ErrFenced) != step.fenced || (err != nil && !step.fenced) {
			t.Fatalf("step %d: Claim(%q) = %d, %v; want %d, fenced %v", i, step.token, prev, err, step.wantPrev, step.fenced)
		}
		if term, err := s.FencedTerm(ctx, "prod"); err != nil || term != step.wantTerm {
			t.Errorf("step %d: FencedTerm = %d, %v; want %d", i, term, err, step.wantTerm)
		}
	}
	a := s.Fenced(state.FenceToken(5, "a"), nil)
	if err := a.SetPending(ctx, "prod", &approval.Pending{Revision: "r", PlanHash: "sha256:p"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if got.Pending == nil || got.Pending.PlanHash != "sha256:p" {
		t.Errorf("pending after the fenced write: %+v, want sha256:p", got.Pending)
	}
}
