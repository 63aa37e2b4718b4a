package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// releaser is the release approval of the environment's runs (see
// release.go): the wait begun after a run's deployment and verification,
// shown on the gate and kept in the state, held across newer revisions that
// change nothing here, superseded by one that does, and decided by a
// person; the rest of the run then goes on through the worker's steps.
type releaser struct {
	env     string
	log     logr.Logger
	now     func() time.Time
	metrics *meter.Metrics
	store   *phaseStore
	seq     *delivery.Run
	tell    *herald.Herald
	// gate is the environment's, which shows the pending release.
	gate      approval.Gate
	approvals *tally.Counter
	manifests manifests
	// passes runs the rest of a run decided (the worker).
	passes passes

	// releaseHash is the plan whose release approval began to wait in
	// this process at releaseSince (local, monotonic): a decision sent to
	// the worker before then is not for it.
	releaseHash  string
	releaseSince time.Time
	// waitMark is the same, for the Daemon's goroutines (a decision the
	// busy worker did not take in time is handed over, see
	// Daemon.decide), set before the pending release is written.
	waitMark atomic.Pointer[releaseMark]
}

// releaseMark is when a release approval of planHash began to wait in this
// process (local, monotonic).
type releaseMark struct {
	planHash string
	since    time.Time
}

// staleFor reports whether a decision taken at at (this process's monotonic
// clock; zero: handed over) on p came before p's release approval began to
// wait in this worker: it was for the plan before its deployment.
func (rl *releaser) staleFor(p *approval.Pending, at time.Time) bool {
	return p.Release && rl.releaseHash == p.PlanHash && !at.IsZero() && at.Before(rl.releaseSince)
}

// awaitRelease starts the run's release approval task i for prop (applied
// and verified): the task started and the pending release written in one
// state write, then announced and shown on the gate. When the write fails
// the next pass reaches the task again. It reports whether the run waits
// (i < 0: the run reached no release approval, nothing to wait for).
func (rl *releaser) await(ctx context.Context, prop approval.Proposal, i int) bool {
	if i < 0 {
		return false
	}
	announce := rl.seq.BeginTask(i)
	rl.waitMark.Store(&releaseMark{planHash: prop.Plan.PlanHash, since: time.Now()})
	p, err := rl.seq.WriteRelease(ctx, prop, rl.approvals.Policy.Required)
	if err != nil {
		rl.metrics.Fail(rl.env, reasonState)
		rl.log.Error(err, "recording the wait for the release approval; trying again at the next pass", "environment", rl.env, "revision", approval.ShortRevision(prop.Revision))
		return true
	}
	rl.releaseHash, rl.releaseSince = p.PlanHash, time.Now()
	announce(ctx)
	rl.log.Info("deployed and verified; waiting for the release approval", "environment", rl.env, "revision", approval.ShortRevision(prop.Revision), "planHash", p.PlanHash)
	st, err := rl.store.Load(ctx, rl.env)
	if err != nil { // shown without its notes; the next repropose has them
		rl.metrics.Fail(rl.env, reasonState)
		st = nil
	}
	rl.propose(ctx, prop, p, st)
	return true
}

// proposeRelease shows the pending release p of prop on the gate, with the
// notes of st (a rollback's hold, an incident's pin: the environment's as
// it is now, not as it was when the plan was proposed; st nil: read
// without the pin).
func (rl *releaser) propose(ctx context.Context, prop approval.Proposal, p *approval.Pending, st *state.EnvState) {
	prop.Release = p.ProposedAt
	prop.Notes = nil
	if rl.manifests != nil {
		prop.Notes = rl.manifests.Notes(ctx, st)
	}
	if p.Needed() > 1 && len(p.Approvals) > 0 {
		prop.Notes = append(prop.Notes[:len(prop.Notes):len(prop.Notes)], "**"+p.Tally()+".**")
	}
	rl.tell.Propose(ctx, rl.gate, prop)
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
func (rl *releaser) hold(ctx context.Context, p *pass) bool {
	s, envM, plan, st := p.snap, p.envM, p.plan, p.st
	r, f := st.Sequence, st.InFlight
	if st.Phase != status.PhaseAwaitingRelease || r == nil || f == nil || f.Revision != r.Revision {
		return false
	}
	if s.Revision != r.Revision && !plan.Empty() {
		rl.supersede(ctx, st, s.Revision)
		return false
	}
	rl.seq.Adopt(r, envM)
	prop, err := inFlightProposal(rl.env, s, st)
	if err != nil {
		rl.metrics.Fail(rl.env, reasonState)
		rl.log.Error(err, "reading the plan waiting for its release approval", "environment", rl.env)
	}
	pend := st.Pending
	if pend == nil || !pend.Release || pend.Revision != r.Revision {
		if pend, err = rl.seq.WriteRelease(ctx, prop, rl.approvals.Policy.Required); err != nil {
			rl.metrics.Fail(rl.env, reasonState)
			rl.log.Error(err, "recording the wait for the release approval", "environment", rl.env)
			return true
		}
		st.Pending = pend
		rl.tell.Forget()
	}
	if rl.tell.Due(prop) {
		rl.propose(ctx, prop, pend, st)
	}
	return true
}

// supersedeRelease ends the wait for the release approval in st because
// revision by is newer: the apply is recorded (it was deployed, never
// released), the pending release and the in-flight record cleared, the run
// aborted saying why, and the gate told the plan was superseded.
func (rl *releaser) supersede(ctx context.Context, st *state.EnvState, by string) {
	f, r := st.InFlight, st.Sequence
	rl.seq.Adopt(r, nil)
	prop, err := inFlightProposal(rl.env, gitsource.Snapshot{}, st)
	if err != nil {
		rl.log.Error(err, "reading the plan superseded while waiting for its release approval", "environment", rl.env)
	}
	why := "its release approval was " + delivery.SupersededWhy(by)
	now := rl.now().UTC()
	e := approval.Entry{Revision: f.Revision, PlanHash: f.PlanHash, Changes: f.Changes, Approver: f.Approver, Approvers: f.Approvers,
		Result: approval.ResultSucceeded, Message: "deployed and verified, never released: " + why, HistoryRewritten: prop.Plan.HistoryRewritten,
		Started: f.Started, Finished: now, Verification: delivery.Verifications(rl.seq.State(), r.Revision)}
	if err := rl.store.Update(ctx, rl.env, func(st *state.EnvState) {
		if st.InFlight == nil || st.InFlight.PlanHash != f.PlanHash {
			return // recorded by someone else already
		}
		st.Record(e, rl.store.HistoryLimit())
		st.InFlight = nil
		if p := st.Pending; p != nil && p.Release && p.Revision == f.Revision {
			st.Pending = nil
		}
		st.Phase = notApplying(st)
	}); err != nil {
		rl.metrics.Fail(rl.env, reasonState)
		rl.log.Error(err, "recording the apply whose release approval was superseded", "environment", rl.env)
		return
	}
	st.InFlight, st.Pending = nil, nil
	st.Phase = st.AtRest()
	rl.seq.Finish(ctx, sequence.StatusAborted, delivery.Ending{Result: promote.ResultFail, Message: "aborted: " + why})
	rl.tell.Superseded(ctx, prop, by) // reported again until GitHub takes it
	rl.log.Info("release approval superseded", "environment", rl.env, "revision", approval.ShortRevision(f.Revision), "by", approval.ShortRevision(by))
}

// decideRelease carries out dc on the pending release d at s: a
// rejection, or an approval counted under the policy; once decided, the
// rest of the run goes on (resumeRun): the release, or the failure.
func (rl *releaser) decide(ctx context.Context, s gitsource.Snapshot, dc decision, d decided) {
	prop, p, reply := d.prop, d.pending, d.reply
	who := dc.who.ID.String()
	if dc.approve {
		var err error
		if p, err = rl.approvals.Count(ctx, rl.store.Store, tally.Vote{PlanHash: dc.planHash, Who: dc.who}); err != nil {
			reply(nil, err)
			return
		}
		if !p.Complete() {
			reply(p, nil)
			prop.Release = p.ProposedAt
			rl.tell.Tally(ctx, prop, p)
			rl.log.Info("release approval counted", "environment", rl.env, "planHash", p.PlanHash, "by", dc.who.String(), "approvals", p.Tally())
			return
		}
		who = approval.JoinApprovers(p.Approvers())
	}
	if err := rl.seq.Decide(ctx, delivery.Release{Pending: p, Approve: dc.approve, Who: who, Reason: dc.reason}); err != nil {
		reply(nil, err)
		return
	}
	reply(p, nil)
	rl.log.Info("release decided", "environment", rl.env, "planHash", p.PlanHash, "approved", dc.approve, "by", who)
	envM, err := rl.manifests.Resolve(ctx, s, nil)
	if err != nil {
		// The decision is kept: the next pass continues the run.
		rl.metrics.Fail(rl.env, reasonResolve)
		rl.log.Error(err, "resolving the manifest to continue the released run; the next pass does", "environment", rl.env)
		rl.passes.wakeUp()
		return
	}
	st, err := rl.store.Load(ctx, rl.env)
	if err != nil {
		rl.metrics.Fail(rl.env, reasonState)
		rl.passes.wakeUp()
		return
	}
	rp := &pass{snap: s, st: st, envM: envM}
	if rl.passes.continueRun(rp) {
		if err := rl.passes.runFrom(ctx, rp, stepVerify); err != nil && ctx.Err() == nil {
			rl.log.Error(err, "releasing", "environment", rl.env)
		}
	}
	rl.passes.endPass(ctx, rp)
}

// takenBefore reports whether a decision taken at at (on this process's
// monotonic clock; zero: another replica's) on p was taken before p, a
// release approval, began to wait here: it was for the plan before its
// deployment, not for its release.
func (rl *releaser) takenBefore(p *approval.Pending, at time.Time) bool {
	m := rl.waitMark.Load()
	return p != nil && p.Release && !at.IsZero() && m != nil && m.planHash == p.PlanHash && at.Before(m.since)
}
