package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// The release approval: an approval task after the deployment in a stage's
// sequence (Keptn's [deployment, test, approval, release]). The plan is
// applied and verified, and then the run waits for a person before the
// rest of it: the release. The wait is kept in the state, so it survives a
// restart and every replica decides it:
//
//   - the run, with the approval task started, and the apply still in flight
//     (st.InFlight: it is recorded in the history once the run ends);
//   - a pending record with Release set, on the applied plan's planHash,
//     written in the same state write as the task's start (WriteRelease):
//     the Decider's Approve and Reject, the API, the CLI, the web page and
//     the check run's buttons act on it as on a plan awaiting approval,
//     under the same policy.
//
// Approving finishes the task with pass and the rest runs; rejecting
// finishes it with fail, which fails the run and the deploy (Release). The
// daemon's worker shows the wait on the gate, supersedes it for a newer
// revision, and counts the approvals.

// approvers is the reserved space of a release approval's outputs.
type approvers struct {
	Approvers []string `json:"approvers"`
}

// WriteRelease keeps the run and the pending release of prop (required
// approvals: required) in one state write (a pending release already there
// for the plan is kept, with its approvals) and returns the pending
// release. Decisions on the plan handed over before (a second approval of
// it, queued while it was applied) are dropped in the same write: they
// were not for its release.
func (r *Run) WriteRelease(ctx context.Context, prop approval.Proposal, required int) (*approval.Pending, error) {
	raw, err := json.Marshal(prop.Plan)
	if err != nil {
		return nil, fmt.Errorf("encoding plan: %w", err)
	}
	p := &approval.Pending{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Plan: raw, ProposedAt: r.Now().UTC(),
		Required: required, Release: true}
	run := r.Copy()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = r.Store.Update(sctx, r.Env, func(st *state.EnvState) {
		st.Sequence, st.Phase = run, status.PhaseAwaitingRelease
		if q := st.Pending; q != nil && q.Release && q.PlanHash == p.PlanHash && q.Revision == p.Revision {
			cp := *q
			p = &cp
			return
		}
		st.Pending = p
		st.Handovers = slices.DeleteFunc(st.Handovers, func(h state.Handover) bool { return h.PlanHash == p.PlanHash })
	})
	if err != nil {
		return nil, fmt.Errorf("recording the pending release of %s: %w", gitsource.ShortRevision(prop.Revision), err)
	}
	return p, nil
}

// Release is a decision on the pending release Pending: approved (by Who,
// the approvers joined) or rejected (by Who, because of Reason).
type Release struct {
	Pending *approval.Pending
	Approve bool
	Who     string
	Reason  string
}

// Decide finishes the run's release approval with d (pass, approved by
// d.Who; or fail, rejected by d.Who: d.Reason) and clears the pending
// release, in one state write, and announces it. The run is then Verifying:
// the rest of it (the release, or the failure) is the caller's to run.
func (r *Run) Decide(ctx context.Context, d Release) error {
	p := d.Pending
	st, err := r.Store.Load(ctx, r.Env)
	if err != nil {
		return err
	}
	run := st.Sequence
	if run == nil || !run.AwaitingRelease() || run.Revision != p.Revision {
		return &approval.NotPendingError{Environment: r.Env, PlanHash: p.PlanHash}
	}
	r.seq = run
	i := run.ReleaseApproval()
	result, msg := promote.ResultPass, "approved by "+d.Who
	var outputs json.RawMessage
	if d.Approve {
		outputs, _ = json.Marshal(approvers{Approvers: p.Approvers()}) // strings
	} else {
		result, msg = promote.ResultFail, "rejected by "+d.Who
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
	}
	before := r.Copy()
	run.Approver = d.Who
	announce := r.FinishTask(i, sequence.Result{Result: result, Message: msg, Outputs: outputs})
	kept := r.Copy()
	if err := r.Store.Update(ctx, r.Env, func(st *state.EnvState) {
		st.Sequence = kept
		if q := st.Pending; q != nil && q.Release && q.PlanHash == p.PlanHash {
			st.Pending = nil
		}
		st.Phase = status.PhaseVerifying // the rest of the run: the release, or the failure
	}); err != nil {
		*run = *before
		r.failed()
		return fmt.Errorf("recording the release decision: %w", err)
	}
	r.moved() // Verifying: the rest of the run
	announce(ctx)
	return nil
}

// ReleasedBy is who approved the release of run, if it is revision's (""
// when it has no release approval, or it was not approved).
func ReleasedBy(run *sequence.State, revision string) string {
	if run == nil || run.Revision != revision {
		return ""
	}
	i := run.ReleaseApproval()
	if i < 0 || run.Tasks[i].Result != promote.ResultPass {
		return ""
	}
	var a approvers
	if json.Unmarshal(run.Tasks[i].Outputs, &a) != nil {
		return ""
	}
	return approval.JoinApprovers(a.Approvers)
}

// ReleaseRejected returns the message of run's release approval, if run
// is revision's, when it was rejected.
func ReleaseRejected(run *sequence.State, revision string) (string, bool) {
	if run == nil || run.Revision != revision {
		return "", false
	}
	i := run.ReleaseApproval()
	if i < 0 || run.Tasks[i].Result != promote.ResultFail {
		return "", false
	}
	return run.Tasks[i].Message, true
}

// VerifyOutputs is what a verification (pkg/verify) adds to its task's
// reserved space.
type VerifyOutputs struct {
	Verification verify.TaskResult `json:"verification"`
}

// Verifications returns the verification results of run, if it is
// revision's, in task order (nil when it ran none).
func Verifications(run *sequence.State, revision string) []verify.TaskResult {
	if run == nil || run.Revision != revision {
		return nil
	}
	var out []verify.TaskResult
	for _, t := range run.Tasks {
		var o VerifyOutputs
		if len(t.Outputs) == 0 || json.Unmarshal(t.Outputs, &o) != nil || o.Verification.Kind == "" {
			continue
		}
		out = append(out, o.Verification)
	}
	return out
}
