package daemon

import (
	"context"
	"errors"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// TestReleaseApprovalOutlivesUnrelatedCommit: a newer revision that changes
// nothing in the environment (a bump of another environment, a README) does
// not end the wait for the release approval: the deployed revision still
// waits, and its approval releases it (recorded succeeded, released by the
// approver, the gate told pass, so that promotion may go on). Ending the
// wait there would leave the versions deployed and never released, with
// nothing left to plan that could release them.
func TestReleaseApprovalOutlivesUnrelatedCommit(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, nil)
	p := w.waiting(t, w.d, w.rev)
	gen := w.generation(t)
	w.h.git.Repo("manifests").Commit(t, "main", map[string]string{"NOTES.md": "unrelated\n"}, "notes")
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if p2 := w.waiting(t, w.d, w.rev); p2.PlanHash != p.PlanHash {
		t.Fatalf("pending release %s after an unrelated commit, want %s still", p2.PlanHash, p.PlanHash)
	}
	if c := completedOf(w.gate); len(c) != 0 {
		t.Fatalf("gate heard %+v after an unrelated commit; want nothing completed", c)
	}
	if _, err := decideNow(t, w.d, pass.Decision{Approve: true, PlanHash: p.PlanHash, Who: ghUser("carol")}); err != nil {
		t.Fatalf("approving the release after an unrelated commit: %v", err)
	}
	h := w.history(t, w.d)
	if len(h) != 1 || h[0].Revision != w.rev || h[0].Result != approval.ResultSucceeded || h[0].ReleasedBy != "github:carol" {
		t.Errorf("history %+v; want %s recorded succeeded, released by carol", h, approval.ShortRevision(w.rev))
	}
	if c := completedOf(w.gate); len(c) != 1 || c[0].Result != approval.ResultSucceeded || c[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want one Completed succeeded with sequence pass", c)
	}
	st, err := w.d.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != nil || st.InFlight != nil || st.Sequence == nil || !st.Sequence.Done() || st.Sequence.Result != promote.ResultPass {
		t.Errorf("pending %+v, in flight %+v, sequence %+v; want nothing left and the run passed", st.Pending, st.InFlight, st.Sequence)
	}
	if w.generation(t) != gen {
		t.Errorf("web generation %d → %d: applied again", gen, w.generation(t))
	}
	// Nothing more at the next pass.
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if c := completedOf(w.gate); len(c) != 1 {
		t.Errorf("gate heard %d outcomes after another pass, want 1", len(c))
	}
}

// TestContinuedRunAfterUnrelatedCommit: a leader stopped during the
// verification leaves the run to the next; when the newest revision by
// then changes nothing in the environment, the next leader still runs the
// rest of it and records the deployed revision (the run was abandoned,
// its check run never completed, when only a run of the newest revision
// was continued).
func TestContinuedRunAfterUnrelatedCommit(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	rev := h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	blocked := &runner{block: true, started: make(chan struct{})}
	d1, _, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, blocked.run))
	ctx1, cancel := context.WithCancel(ctx)
	started := blocked.started
	go func() { <-started; cancel() }()
	if err := d1.Once(ctx1); err != nil && ctx1.Err() == nil {
		t.Fatal(err)
	}
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"NOTES.md": "unrelated\n"}, "notes")

	pass := &runner{result: sequence.Result{Result: promote.ResultPass, Message: "smoke suite passed"}}
	d2, gate2, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, pass.run))
	if err := d2.Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := d2.store.Load(ctx, "devel")
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlight != nil || st.Sequence == nil || st.Sequence.Revision != rev || !st.Sequence.Done() || st.Sequence.Result != promote.ResultPass {
		t.Errorf("in flight %+v, sequence %+v; want the run of %s finished with pass", st.InFlight, st.Sequence, approval.ShortRevision(rev))
	}
	if len(st.History) == 0 || st.History[0].Revision != rev || st.History[0].Result != approval.ResultSucceeded {
		t.Errorf("history %+v; want %s recorded succeeded", st.History, approval.ShortRevision(rev))
	}
	if c := completedOf(gate2); len(c) != 1 || c[0].Result != approval.ResultSucceeded || c[0].Sequence != promote.ResultPass {
		t.Errorf("gate heard %+v, want one Completed succeeded with sequence pass", c)
	}
}

// notesGate records the notes of each release approval it is shown.
type notesGate struct {
	recordingGate
	release [][]string
}

func (g *notesGate) Propose(ctx context.Context, p approval.Proposal) (approval.Decision, error) {
	if !p.Release.IsZero() {
		g.mu.Lock()
		g.release = append(g.release, p.Notes)
		g.mu.Unlock()
	}
	return g.recordingGate.Propose(ctx, p)
}

// TestReleaseApprovalShowsNotes: a release approval is shown with the
// environment's notes as they are when it waits (a rollback's hold, an
// incident's pin), by the process that deployed it and by the next one;
// devel's plan (skipConfirmation) was never shown with them.
func TestReleaseApprovalShowsNotes(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": releasePipeline}, "release approval")
	const held = "**Held by a rollback:** prod-incident."
	for i := range 2 { // the process that deploys, then a restart
		gate := &notesGate{}
		pass := &runner{result: sequence.Result{Result: promote.ResultPass}}
		d, _, _ := sequenceDaemon(t, h, WithTask(promote.TaskTest, pass.run), WithGate(gate))
		w := d.workers["devel"]
		w.manifests = heldNotes{Manifests: w.manifests, note: held}
		w.release.Manifests, w.keeper.Manifests, w.desk.Manifests = w.manifests, w.manifests, w.manifests // each shows notes
		if err := d.Once(ctx); err != nil {
			t.Fatal(err)
		}
		gate.mu.Lock()
		got := gate.release
		gate.mu.Unlock()
		if len(got) != 1 || len(got[0]) != 1 || got[0][0] != held {
			t.Errorf("process %d showed the release with notes %q, want once with %q", i+1, got, held)
		}
	}
}

// TestReleaseDecidedOnce: the first decision on a release approval is the
// only one: approving it again, or rejecting it a moment later, is refused
// as not pending, and neither changes what was recorded or deployed.
func TestReleaseDecidedOnce(t *testing.T) {
	for _, second := range []pass.Decision{{Approve: true, Who: ghUser("bob")}, {Who: ghUser("bob"), Reason: "changed my mind"}} {
		name := "approve again"
		if !second.Approve {
			name = "reject after"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := newReleaseWorld(t, nil)
			p := w.waiting(t, w.d, w.rev)
			if _, err := decideNow(t, w.d, pass.Decision{Approve: true, PlanHash: p.PlanHash, Who: ghUser("alice")}); err != nil {
				t.Fatal(err)
			}
			second.PlanHash = p.PlanHash
			if _, err := decideNow(t, w.d, second); !errors.Is(err, approval.ErrNotPending) {
				t.Errorf("the second decision = %v, want ErrNotPending", err)
			}
			if err := w.d.Once(ctx); err != nil {
				t.Fatal(err)
			}
			h := w.history(t, w.d)
			if len(h) != 1 || h[0].Result != approval.ResultSucceeded || h[0].ReleasedBy != "github:alice" {
				t.Errorf("history %+v; want one entry, succeeded, released by alice", h)
			}
			if c := completedOf(w.gate); len(c) != 1 || c[0].Result != approval.ResultSucceeded {
				t.Errorf("gate heard %+v, want one Completed succeeded", c)
			}
			if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:1.0.0" {
				t.Errorf("devel runs %s, want web:1.0.0", got)
			}
		})
	}
}

// TestReleaseSupersededAcrossLeaders: the leader changes while the release
// approval waits and, at once, a newer revision changes the environment:
// the new process records the old apply (deployed, never released), aborts
// its run, applies the new revision and waits for its release, and a
// decision for the old planHash is refused.
func TestReleaseSupersededAcrossLeaders(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, nil)
	old := w.waiting(t, w.d, w.rev)
	rev2 := w.h.commit("devel", true, map[string]string{"web": "1.1.0"})
	d2, _, l2 := w.daemon(t)
	if err := d2.Once(ctx); err != nil {
		t.Fatal(err)
	}
	w.waiting(t, d2, rev2)
	if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:1.1.0" {
		t.Errorf("devel runs %s, want web:1.1.0", got)
	}
	h := w.history(t, d2)
	if len(h) != 1 || h[0].Revision != w.rev || h[0].Result != approval.ResultSucceeded || h[0].ReleasedBy != "" {
		t.Errorf("history %+v; want the old apply recorded, deployed and never released", h)
	}
	if names := l2.names(); len(names) == 0 || names[0] != "devel.delivery.finished fail" {
		t.Errorf("the new process's events %v; want the old run finished (aborted) first", names)
	}
	if _, err := decideNow(t, d2, pass.Decision{Approve: true, PlanHash: old.PlanHash, Who: ghUser("alice")}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("approving the old release = %v, want ErrNotPending", err)
	}
}

// TestReleaseRejectedAfterUnrelatedCommit: with onFailedRollout: rollback, a
// release rejected after a commit for another environment (the wait went
// on) is rolled back, and the newest revision, which changes nothing of
// what was rejected, does not deploy it again; a revision that changes the
// service does.
func TestReleaseRejectedAfterUnrelatedCommit(t *testing.T) {
	ctx := context.Background()
	w := newReleaseWorld(t, func(ec *config.Environment) { ec.OnFailedRollout = config.OnFailedRolloutRollback })
	p := w.waiting(t, w.d, w.rev)
	w.h.git.Repo("manifests").Commit(t, "main", map[string]string{"NOTES.md": "unrelated\n"}, "notes")
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := decideNow(t, w.d, pass.Decision{PlanHash: p.PlanHash, Who: ghUser("alice"), Reason: "not before the sale"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.d.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:0.9.0" {
		t.Errorf("devel runs %s after the rejection and two passes, want web:0.9.0 (rolled back, not deployed again)", got)
	}
	h := w.history(t, w.d)
	if len(h) != 1 || h[0].Result != approval.ResultRolledBack {
		t.Errorf("history %+v; want one entry, rolled back", h)
	}
	w.h.commit("devel", true, map[string]string{"web": "1.1.0"})
	if err := w.d.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cluster.Env(t).Image(t, w.h.ns["devel"], "web"); got != imageRepo+"web:1.1.0" {
		t.Errorf("devel runs %s after a revision changing web, want web:1.1.0", got)
	}
}

// heldNotes are manifests whose proposals show note.
type heldNotes struct {
	pass.Manifests
	note string
}

func (h heldNotes) Notes(context.Context, *state.EnvState) []string { return []string{h.note} }
