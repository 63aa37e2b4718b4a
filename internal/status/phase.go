package status

import "fmt"

// Phase is where an environment is in its lifecycle. The daemon moves an
// environment from one phase to the next explicitly and keeps the phase in the
// environment's state, so the API, the page, the Environment resource and the
// rules that depend on it (deploy windows, waits) read one value instead of
// inferring it from which records happen to be set.
type Phase string

// The phases. An environment starts Idle.
const (
	// PhaseIdle: nothing to do; the live images are the desired ones, or what
	// differs is blocked or a problem the plan reports.
	PhaseIdle Phase = "Idle"
	// PhaseAwaitingApproval: a plan is proposed and waits for the approvals
	// its policy requires.
	PhaseAwaitingApproval Phase = "AwaitingApproval"
	// PhaseDeferred: an approved (or auto-approved) plan waits for the
	// environment's deploy window (environments.<env>.windows): nothing is
	// applied until the windows open.
	PhaseDeferred Phase = "Deferred"
	// PhaseApplying: an approved (or auto-approved) plan is being patched
	// into the targets and their rollouts awaited.
	PhaseApplying Phase = "Applying"
	// PhaseVerifying: the apply finished and the delivery sequence's tasks
	// (tests, evaluations) run.
	PhaseVerifying Phase = "Verifying"
	// PhaseAwaitingRelease: the sequence waits for a person's release
	// approval after the deployment.
	PhaseAwaitingRelease Phase = "AwaitingRelease"
	// PhaseRollingBack: a failed deploy's previous images are being
	// restored.
	PhaseRollingBack Phase = "RollingBack"
	// PhaseFailed: the last deploy failed (or was rolled back) and its
	// revision is not applied again until a new one arrives.
	PhaseFailed Phase = "Failed"
)

// Phases lists every phase, in lifecycle order.
var Phases = []Phase{
	PhaseIdle, PhaseAwaitingApproval, PhaseDeferred, PhaseApplying, PhaseVerifying,
	PhaseAwaitingRelease, PhaseRollingBack, PhaseFailed,
}

// ParsePhase reads a phase written by Phase.String; "" reads as Idle (a state
// written before phases were kept).
func ParsePhase(s string) (Phase, error) {
	if s == "" {
		return PhaseIdle, nil
	}
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("parse phase %q: want one of %v", s, Phases)
}

func (p Phase) String() string { return string(p) }

// follows lists, for each phase, the phases an environment may move to from
// it. A phase may always stay as it is (a pass that finds nothing new, an
// apply continued by the next leader).
var follows = map[Phase][]Phase{
	// A plan proposed, or applied at once (skipConfirmation); a rollback
	// left by a crash between the failed apply's record and its restore is
	// continued.
	// An auto-approved plan outside the deploy window waits (Deferred).
	PhaseIdle: {PhaseAwaitingApproval, PhaseApplying, PhaseDeferred},
	// Approved; superseded, rejected, or nothing left to apply; its
	// revision rolled back meanwhile (by another replica's pass); approved
	// outside the deploy window (Deferred).
	PhaseAwaitingApproval: {PhaseApplying, PhaseIdle, PhaseFailed, PhaseDeferred},
	// The window opened: applied; superseded
	// by a newer revision, proposed (AwaitingApproval) or with nothing left
	// to apply (Idle); its revision rolled back meanwhile (Failed).
	PhaseDeferred: {PhaseApplying, PhaseAwaitingApproval, PhaseIdle, PhaseFailed},
	// Deployed, with tasks after the deployment (Verifying); recorded
	// (Idle); failed with onFailedRollout: rollback (RollingBack); refused
	// because the plan changed since it was approved, the new one proposed
	// (AwaitingApproval), or back where it was when the last deploy was
	// rolled back (Failed).
	PhaseApplying: {PhaseVerifying, PhaseIdle, PhaseRollingBack, PhaseAwaitingApproval, PhaseFailed},
	// A release approval after the tests; recorded; a task failed and
	// the environment rolls back.
	PhaseVerifying: {PhaseAwaitingRelease, PhaseIdle, PhaseRollingBack},
	// Released (the rest of the run goes on), superseded by a newer
	// revision or rejected (Idle), rejected and rolled back.
	PhaseAwaitingRelease: {PhaseVerifying, PhaseIdle, PhaseRollingBack},
	// The images restored and the rollback recorded.
	PhaseRollingBack: {PhaseFailed},
	// A new revision: proposed, applied, deferred, or nothing to do.
	PhaseFailed: {PhaseAwaitingApproval, PhaseApplying, PhaseIdle, PhaseDeferred},
}

// CanFollow reports whether an environment in phase from may move to phase
// to (see follows).
func (to Phase) CanFollow(from Phase) bool {
	if to == from {
		return true
	}
	for _, p := range follows[from] {
		if p == to {
			return true
		}
	}
	return false
}
