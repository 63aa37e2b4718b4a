package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
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
//     written in the same state write as the task's start: the Decider's
//     Approve and Reject, the API, the CLI, the web page and the check
//     run's buttons act on it as on a plan awaiting approval, under the
//     same policy (approvals.required, forbidAuthors, teams, minPermission).
//
// Approving finishes the task with pass and runs the rest; rejecting
// finishes it with fail, which fails the run and the deploy: recorded as
// failed, the check run failure, and with onFailedRollout: rollback the
// workloads are put back as after a failed verification. A newer revision
// supersedes the wait: the apply is recorded (deployed, never released),
// the run aborted, and the new revision planned. A decision taken before
// the wait began (a second approval of the plan before its deployment,
// queued while it was applied) is refused as stale.

// awaitRelease starts the run's release approval task i for prop (applied
// and verified): the task started and the pending release written in one
// state write, then announced and shown on the gate. When the write fails
// the next pass reaches the task again. It reports whether the run waits
// (i < 0: the run reached no release approval, nothing to wait for).
func (w *worker) awaitRelease(ctx context.Context, prop approval.Proposal, i int) bool {
	if i < 0 {
		return false
	}
	announce := w.seq.BeginTask(i)
	w.waitMark.Store(&releaseMark{planHash: prop.Plan.PlanHash, since: time.Now()})
	p, err := w.seq.WriteRelease(ctx, prop, w.approvals.Policy.Required)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording the wait for the release approval; trying again at the next pass", "environment", w.env, "revision", short(prop.Revision))
		return true
	}
	w.releaseHash, w.releaseSince = p.PlanHash, time.Now()
	announce(ctx)
	w.log.Info("deployed and verified; waiting for the release approval", "environment", w.env, "revision", short(prop.Revision), "planHash", p.PlanHash)
	st, err := w.store.Load(ctx, w.env)
	if err != nil { // shown without its notes; the next repropose has them
		w.metrics.fail(w.env, reasonState)
		st = nil
	}
	w.proposeRelease(ctx, prop, p, st)
	return true
}

// proposeRelease shows the pending release p of prop on the gate, with the
// notes of st (a rollback's hold, an incident's pin: the environment's as
// it is now, not as it was when the plan was proposed; st nil: read
// without the pin).
func (w *worker) proposeRelease(ctx context.Context, prop approval.Proposal, p *approval.Pending, st *state.EnvState) {
	prop.Release = p.ProposedAt
	prop.Notes = nil
	if w.manifests != nil {
		prop.Notes = w.manifests.Notes(ctx, st)
	}
	if p.Needed() > 1 && len(p.Approvals) > 0 {
		prop.Notes = append(prop.Notes[:len(prop.Notes):len(prop.Notes)], "**"+p.Tally()+".**")
	}
	w.propose(ctx, w.gate, prop)
}

// holdRelease handles, at the start of a pass at s (planned as plan), a
// run that waits for its release approval: s at its revision, or a newer
// revision that changes nothing here (plan is empty: a commit for another
// environment, a README), keeps waiting (shown on the gate again after a
// restart or the repropose period; the pending release written again if
// it went) and the pass ends there (true); a newer revision with changes
// supersedes the wait and the pass goes on (false), with st kept in step.
// (Ending the wait for a revision with nothing to apply would leave the
// deployed versions never released, with no plan left to release them.)
func (w *worker) holdRelease(ctx context.Context, p *pass) bool {
	s, envM, plan, st := p.snap, p.envM, p.plan, p.st
	r, f := st.Sequence, st.InFlight
	if st.Phase != status.PhaseAwaitingRelease || r == nil || f == nil || f.Revision != r.Revision {
		return false
	}
	if s.Revision != r.Revision && !plan.Empty() {
		w.supersedeRelease(ctx, st, s.Revision)
		return false
	}
	w.seq.Adopt(r, envM)
	prop, err := inFlightProposal(w.env, s, st)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "reading the plan waiting for its release approval", "environment", w.env)
	}
	pend := st.Pending
	if pend == nil || !pend.Release || pend.Revision != r.Revision {
		if pend, err = w.seq.WriteRelease(ctx, prop, w.approvals.Policy.Required); err != nil {
			w.metrics.fail(w.env, reasonState)
			w.log.Error(err, "recording the wait for the release approval", "environment", w.env)
			return true
		}
		st.Pending = pend
		w.proposed = ""
	}
	if w.proposed != proposalKey(prop) || w.now().Sub(w.proposedAt) >= w.repropose {
		w.proposeRelease(ctx, prop, pend, st)
	}
	return true
}

// inFlightProposal is the proposal of the apply in flight in env's state st at s: the
// pending release's plan when there is one, else the in-flight record's
// planHash and changes.
func inFlightProposal(env string, s gitsource.Snapshot, st *state.EnvState) (approval.Proposal, error) {
	f := st.InFlight
	prop := approval.Proposal{Environment: env, Revision: f.Revision, RevisionTime: s.Time}
	if p := st.Pending; p != nil && p.Release && p.PlanHash == f.PlanHash {
		plan, err := decodePlan(env, p)
		prop.Plan = plan
		return prop, err
	}
	var changes []reconcile.Change
	err := json.Unmarshal(f.Changes, &changes)
	if err != nil {
		err = fmt.Errorf("decoding the changes of the apply in flight: %w", err)
	}
	prop.Plan = &reconcile.Plan{Environment: env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	return prop, err
}

// supersedeRelease ends the wait for the release approval in st because
// revision by is newer: the apply is recorded (it was deployed, never
// released), the pending release and the in-flight record cleared, the run
// aborted saying why, and the gate told the plan was superseded.
func (w *worker) supersedeRelease(ctx context.Context, st *state.EnvState, by string) {
	f, r := st.InFlight, st.Sequence
	w.seq.Adopt(r, nil)
	prop, err := inFlightProposal(w.env, gitsource.Snapshot{}, st)
	if err != nil {
		w.log.Error(err, "reading the plan superseded while waiting for its release approval", "environment", w.env)
	}
	why := "its release approval was " + delivery.SupersededWhy(by)
	now := w.now().UTC()
	e := approval.Entry{Revision: f.Revision, PlanHash: f.PlanHash, Changes: f.Changes, Approver: f.Approver, Approvers: f.Approvers,
		Result: approval.ResultSucceeded, Message: "deployed and verified, never released: " + why, HistoryRewritten: prop.Plan.HistoryRewritten,
		Started: f.Started, Finished: now, Verification: delivery.Verifications(w.seq.State(), r.Revision)}
	if err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		if st.InFlight == nil || st.InFlight.PlanHash != f.PlanHash {
			return // recorded by someone else already
		}
		st.Record(e, w.store.HistoryLimit())
		st.InFlight = nil
		if p := st.Pending; p != nil && p.Release && p.Revision == f.Revision {
			st.Pending = nil
		}
		st.Phase = notApplying(st)
	}); err != nil {
		w.metrics.fail(w.env, reasonState)
		w.log.Error(err, "recording the apply whose release approval was superseded", "environment", w.env)
		return
	}
	st.InFlight, st.Pending = nil, nil
	st.Phase = st.AtRest()
	w.seq.Finish(ctx, sequence.StatusAborted, delivery.Ending{Result: promote.ResultFail, Message: "aborted: " + why})
	if err := w.gate.Superseded(ctx, prop, by); err != nil {
		w.metrics.fail(w.env, reasonGate)
		w.log.Error(err, "reporting the superseded release", "environment", w.env, "planHash", f.PlanHash)
		w.owed.Owe(ctx, outbox.Superseded(prop, by), err) // reported again until GitHub takes it
	}
	w.log.Info("release approval superseded", "environment", w.env, "revision", short(f.Revision), "by", short(by))
}

// decided is a decision's pending plan, as a proposal, and how it is
// answered (once).
type decided struct {
	prop    approval.Proposal
	pending *approval.Pending
	reply   func(*approval.Pending, error)
}

// decideRelease carries out dc on the pending release d at s: a
// rejection, or an approval counted under the policy; once decided, the
// rest of the run goes on (resumeRun): the release, or the failure.
func (w *worker) decideRelease(ctx context.Context, s gitsource.Snapshot, dc decision, d decided) {
	prop, p, reply := d.prop, d.pending, d.reply
	who := dc.who.ID.String()
	if dc.approve {
		var err error
		if p, err = w.approvals.Count(ctx, w.store.Store, tally.Vote{PlanHash: dc.planHash, Who: dc.who}); err != nil {
			reply(nil, err)
			return
		}
		if !p.Complete() {
			reply(p, nil)
			prop.Release = p.ProposedAt
			w.tally(ctx, prop, p)
			w.log.Info("release approval counted", "environment", w.env, "planHash", p.PlanHash, "by", dc.who.String(), "approvals", p.Tally())
			return
		}
		who = approval.JoinApprovers(p.Approvers())
	}
	if err := w.seq.Decide(ctx, delivery.Release{Pending: p, Approve: dc.approve, Who: who, Reason: dc.reason}); err != nil {
		reply(nil, err)
		return
	}
	reply(p, nil)
	w.log.Info("release decided", "environment", w.env, "planHash", p.PlanHash, "approved", dc.approve, "by", who)
	envM, err := w.manifests.Resolve(ctx, s, nil)
	if err != nil {
		// The decision is kept: the next pass continues the run.
		w.metrics.fail(w.env, reasonResolve)
		w.log.Error(err, "resolving the manifest to continue the released run; the next pass does", "environment", w.env)
		w.wakeUp()
		return
	}
	st, err := w.store.Load(ctx, w.env)
	if err != nil {
		w.metrics.fail(w.env, reasonState)
		w.wakeUp()
		return
	}
	rp := &pass{snap: s, st: st, envM: envM}
	if w.continueRun(rp) {
		if err := w.runSteps(ctx, rp, w.stepsFrom(stepVerify)); err != nil && ctx.Err() == nil {
			w.log.Error(err, "releasing", "environment", w.env)
		}
	}
	w.endPass(ctx, rp)
}
