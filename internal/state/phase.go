package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// phaseRecord is phase.json: the phase, and a sum of the records it was
// written beside (recordsSum).
type phaseRecord struct {
	Phase status.Phase `json:"phase"`
	Of    string       `json:"of"`
}

// readPhase is the phase st was written with (raw: phase.json), or the
// phase its records say (DerivePhase) when it has none (a state written
// before phases were kept), one this build does not know (a newer build's),
// one that does not decode, or one written beside other records than st's:
// a build that does not know phases carries phase.json over untouched (or
// drops it) while it changes the records, so a phase kept is believed only
// for the records it was moved with. An upgrade, a rolling one, or a
// rollback of one keeps working.
func readPhase(st *EnvState, raw []byte) status.Phase {
	var r phaseRecord
	if raw == nil || json.Unmarshal(raw, &r) != nil || r.Of != recordsSum(st) {
		return DerivePhase(st)
	}
	if p, err := status.ParsePhase(string(r.Phase)); err == nil && r.Phase != "" {
		return p
	}
	return DerivePhase(st)
}

// movedPhase is the phase to write with st after mutate changed it from a
// state read with phase and records summed sum: st's own, unless the records
// the lifecycle moves changed while its phase did not (a write that knows
// nothing of phases, or forgot to move it): the phase is then the records'
// (DerivePhase), as it would read after a build that does not know phases
// wrote them.
func movedPhase(st *EnvState, phase status.Phase, sum string) status.Phase {
	if st.Phase == phase && recordsSum(st) != sum {
		return DerivePhase(st)
	}
	return st.Phase
}

// recordsSum sums what of st's records the lifecycle moves: the pending
// plan, the apply in flight, the run and its tasks' progress, a rollback,
// the last rollback and the history's newest entry. Approvals counted,
// decisions handed over, the status and the pin are not in it.
func recordsSum(st *EnvState) string {
	type task struct{ Status, Result string }
	var v struct {
		Pending  []string `json:",omitempty"`
		InFlight []string `json:",omitempty"`
		Run      []string `json:",omitempty"`
		Tasks    []task   `json:",omitempty"`
		Rollback string   `json:",omitempty"`
		Failed   int64    `json:",omitempty"`
		LastID   int64    `json:",omitempty"`
		Newest   int64    `json:",omitempty"`
	}
	if p := st.Pending; p != nil {
		v.Pending = []string{p.Revision, p.PlanHash, p.ProposedAt.UTC().Format(time.RFC3339Nano), strconv.FormatBool(p.Release)}
	}
	if f := st.InFlight; f != nil {
		v.InFlight = []string{f.Revision, f.PlanHash, f.Started.UTC().Format(time.RFC3339Nano)}
	}
	if r := st.Sequence; r != nil {
		v.Run = []string{r.Revision, r.PlanHash, r.Status}
		for _, t := range r.Tasks {
			v.Tasks = append(v.Tasks, task{t.Status, t.Result})
		}
	}
	if rb := st.Rollback; rb != nil {
		v.Rollback = rb.Entry.PlanHash + " " + rb.At.UTC().Format(time.RFC3339Nano)
	}
	if st.Failed != nil {
		v.Failed = st.Failed.EntryID
	}
	v.LastID = st.LastID
	if len(st.History) > 0 {
		v.Newest = st.History[0].ID
	}
	b, _ := json.Marshal(v) // strings and numbers
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// DerivePhase is the phase st's records say: a rollback under way; an apply
// in flight waiting for its release approval, with its deployment done
// (tasks after it run), or being applied; a plan waiting for approval; the
// last entry a rollback; else idle. The daemon moves the phase explicitly;
// this reads a state that has none, once.
func DerivePhase(st *EnvState) status.Phase {
	switch {
	case st.Rollback != nil:
		return status.PhaseRollingBack
	case st.InFlight != nil:
		r := st.Sequence
		if r == nil || r.Revision != st.InFlight.Revision {
			return status.PhaseApplying
		}
		if r.AwaitingRelease() {
			return status.PhaseAwaitingRelease
		}
		if i := r.Index(promote.TaskDeployment); i >= 0 && r.Tasks[i].Result == promote.ResultPass {
			return status.PhaseVerifying
		}
		return status.PhaseApplying
	case st.Pending != nil && st.Pending.Release:
		return status.PhaseAwaitingRelease
	case st.Pending != nil:
		return status.PhaseAwaitingApproval
	}
	return st.AtRest()
}

// AtRest is the phase of st once nothing is under way (no plan pending, no
// apply in flight, no rollback): Failed while the newest entry of its
// history is the rollback st.Failed names (or the history keeps none
// newer), else Idle.
func (st *EnvState) AtRest() status.Phase {
	if st.Failed == nil {
		return status.PhaseIdle
	}
	if len(st.History) == 0 {
		return status.PhaseFailed
	}
	e := st.History[0]
	if e.ID == st.Failed.EntryID || (e.Result == approval.ResultRolledBack && e.Revision == st.Failed.Revision) {
		return status.PhaseFailed
	}
	return status.PhaseIdle
}
