package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// run is a sequence run of revision whose deployment ended with deployed
// ("" not yet) and whose release approval (when release) has started.
func run(revision, deployed string, release bool) *sequence.State {
	r := &sequence.State{Revision: revision, Status: sequence.StatusStarted, Tasks: []sequence.TaskState{
		{Name: promote.TaskApproval, Status: sequence.StatusFinished, Result: promote.ResultPass},
		{Name: promote.TaskDeployment, Status: sequence.StatusStarted}}}
	if deployed != "" {
		r.Tasks[1].Status, r.Tasks[1].Result = sequence.StatusFinished, deployed
	}
	if release {
		r.Tasks = append(r.Tasks, sequence.TaskState{Name: promote.TaskApproval, Status: sequence.StatusStarted})
	}
	return r
}

// TestDerivePhase: a state written before phases were kept reads with the
// phase its records say.
func TestDerivePhase(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	inFlight := &approval.InFlight{Revision: "r2", PlanHash: "sha256:p2", Changes: json.RawMessage(`[]`), Started: at}
	pending := &approval.Pending{Revision: "r2", PlanHash: "sha256:p2", ProposedAt: at}
	release := &approval.Pending{Revision: "r2", PlanHash: "sha256:p2", ProposedAt: at, Release: true}
	rolledBack := approval.Entry{ID: 4, Revision: "r1", Result: approval.ResultRolledBack}
	failed := &approval.RolledBack{Revision: "r1", EntryID: 4, At: at}
	for _, tc := range []struct {
		name string
		st   EnvState
		want status.Phase
	}{
		{"nothing", EnvState{}, status.PhaseIdle},
		{"pending", EnvState{Pending: pending}, status.PhaseAwaitingApproval},
		{"in flight without a run", EnvState{InFlight: inFlight}, status.PhaseApplying},
		{"in flight, pending kept until recorded", EnvState{InFlight: inFlight, Pending: pending, Sequence: run("r2", "", false)}, status.PhaseApplying},
		{"in flight, run of another revision", EnvState{InFlight: inFlight, Sequence: run("r1", promote.ResultPass, false)}, status.PhaseApplying},
		{"deployed, tasks after it", EnvState{InFlight: inFlight, Sequence: run("r2", promote.ResultPass, false)}, status.PhaseVerifying},
		{"deployed, awaiting release", EnvState{InFlight: inFlight, Pending: release, Sequence: run("r2", promote.ResultPass, true)}, status.PhaseAwaitingRelease},
		{"pending release alone", EnvState{Pending: release}, status.PhaseAwaitingRelease},
		{"rolling back", EnvState{InFlight: inFlight, Rollback: &Rollback{Entry: rolledBack, At: at}}, status.PhaseRollingBack},
		{"rolled back", EnvState{Failed: failed, History: []approval.Entry{rolledBack}}, status.PhaseFailed},
		{"rolled back, then a newer revision applied", EnvState{Failed: failed,
			History: []approval.Entry{{ID: 5, Revision: "r3", Result: approval.ResultSucceeded}, rolledBack}}, status.PhaseIdle},
		{"rolled back, a newer plan pending", EnvState{Failed: failed, Pending: pending, History: []approval.Entry{rolledBack}}, status.PhaseAwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DerivePhase(&tc.st); got != tc.want {
				t.Errorf("DerivePhase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestReadPhase: a phase kept is read as it is; none, one this build does
// not know (a newer build's), one that does not decode, or one kept beside
// other records (carried over by a build that does not know phases while it
// changed them) reads as the records say.
func TestReadPhase(t *testing.T) {
	pending := &approval.Pending{Revision: "r2", PlanHash: "sha256:p2"}
	withPending := &EnvState{Pending: pending}
	kept := func(p status.Phase, beside *EnvState) string {
		b, err := json.Marshal(phaseRecord{Phase: p, Of: recordsSum(beside)})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name  string
		phase string // as kept in phase.json; "-" no key
		want  status.Phase
	}{
		{"kept", kept(status.PhaseVerifying, withPending), status.PhaseVerifying},
		{"older build: no key", "-", status.PhaseAwaitingApproval},
		{"empty", kept("", withPending), status.PhaseAwaitingApproval},
		{"unknown to this build", kept("Paused", withPending), status.PhaseAwaitingApproval},
		{"another case", kept("verifying", withPending), status.PhaseAwaitingApproval},
		{"kept beside other records", kept(status.PhaseIdle, &EnvState{}), status.PhaseAwaitingApproval},
		{"a bare string", `"Verifying"`, status.PhaseAwaitingApproval},
		{"not JSON", `{`, status.PhaseAwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := encodeState("stagehand-state-prod", &EnvState{Pending: pending}, maxStateBytes)
			if err != nil {
				t.Fatal(err)
			}
			if tc.phase != "-" {
				e.data[keyPhase] = tc.phase
			}
			st, err := decodeEncoded(t, e)
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase != tc.want {
				t.Errorf("phase %s read as %s, want %s", tc.phase, st.Phase, tc.want)
			}
		})
	}
}

// TestPhaseCarriedOverStale: a build that does not know phases carries
// phase.json over as it is while it records the apply the phase was about;
// the phase read is then the records', not the stale one.
func TestPhaseCarriedOverStale(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	st := &EnvState{Phase: status.PhaseApplying,
		InFlight: &approval.InFlight{Revision: "r2", PlanHash: "sha256:p2", Changes: json.RawMessage(`[]`), Started: at}}
	newer, err := encodeState("stagehand-state-prod", st, maxStateBytes)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeEncoded(t, newer); err != nil || got.Phase != status.PhaseApplying {
		t.Fatalf("phase as written = %v, %v; want Applying", got.Phase, err)
	}
	// The older build records the apply (and knows nothing of phases).
	st.Phase, st.InFlight = "", nil
	st.Record(approval.Entry{Revision: "r2", PlanHash: "sha256:p2", Result: approval.ResultSucceeded}, DefaultHistoryLimit)
	older, err := encodeState("stagehand-state-prod", st, maxStateBytes)
	if err != nil {
		t.Fatal(err)
	}
	older.data[keyPhase] = newer.data[keyPhase] // carried over untouched
	got, err := decodeEncoded(t, older)
	if err != nil || got.Phase != status.PhaseIdle {
		t.Errorf("phase after the older build's write = %v, %v; want Idle (the records'), not the stale Applying", got.Phase, err)
	}
}

// TestMovedPhase: a write that changes the records the lifecycle moves
// without moving the phase writes the records' phase; one that moves it, or
// changes nothing the lifecycle moves (a status, an approval counted), keeps
// the phase it has.
func TestMovedPhase(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	idle := &EnvState{Phase: status.PhaseIdle}
	for _, tc := range []struct {
		name   string
		mutate func(*EnvState)
		want   status.Phase
	}{
		{"a rollback written without its phase", func(st *EnvState) {
			st.Rollback = &Rollback{Entry: approval.Entry{PlanHash: "sha256:p"}, At: at}
		}, status.PhaseRollingBack},
		{"a plan proposed with its phase", func(st *EnvState) {
			st.Pending, st.Phase = &approval.Pending{PlanHash: "sha256:p", ProposedAt: at}, status.PhaseAwaitingApproval
		}, status.PhaseAwaitingApproval},
		{"a status written", func(st *EnvState) { st.Status = json.RawMessage(`{"revision":"r2"}`) }, status.PhaseIdle},
		{"a phase moved alone", func(st *EnvState) { st.Phase = status.PhaseFailed }, status.PhaseFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := *idle
			phase, sum := st.Phase, recordsSum(&st)
			tc.mutate(&st)
			if got := movedPhase(&st, phase, sum); got != tc.want {
				t.Errorf("movedPhase = %s, want %s", got, tc.want)
			}
		})
	}
}
