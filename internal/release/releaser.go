package release

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Releaser is the release approval of an environment's runs (see
// release.go): the wait begun after a run's deployment and verification,
// shown on the gate and kept in the state, held across newer revisions that
// change nothing here, superseded by one that does, and decided by a
// person; the rest of the run then goes on through the worker's steps.
type Releaser struct {
	Config

	// releaseHash is the plan whose release approval began to wait in
	// this process at releaseSince (local, monotonic): a decision sent to
	// the worker before then is not for it.
	releaseHash  string
	releaseSince time.Time
	// waitMark is the same, for the daemon's goroutines (a decision the
	// busy worker did not take in time is handed over), set before the
	// pending release is written.
	waitMark atomic.Pointer[releaseMark]
}

// Config is what a Releaser is given by the worker.
type Config struct {
	pass.Room
	Seq  *delivery.Run
	Tell *herald.Herald
	// Gate is the environment's, which shows the pending release.
	Gate      approval.Gate
	Approvals *tally.Counter
	Manifests pass.Manifests
	// Passes runs the rest of a run decided (the worker).
	Passes pass.Runner
}

// New makes the release approval of c.Env's runs.
func New(c Config) *Releaser { return &Releaser{Config: c} }

// Since is when the release approval that waits now began to wait in this
// process (local, monotonic; zero: none began here).
func (rl *Releaser) Since() time.Time { return rl.releaseSince }

// releaseMark is when a release approval of planHash began to wait in this
// process (local, monotonic).
type releaseMark struct {
	planHash string
	since    time.Time
}

// StaleFor reports whether a decision taken at at (this process's monotonic
// clock; zero: handed over) on p came before p's release approval began to
// wait in this worker: it was for the plan before its deployment.
func (rl *Releaser) StaleFor(p *approval.Pending, at time.Time) bool {
	return p.Release && rl.releaseHash == p.PlanHash && !at.IsZero() && at.Before(rl.releaseSince)
}

// Await starts the run's release approval task i for prop (applied
// and verified): the task started and the pending release written in one
// state write, then announced and shown on the gate. When the write fails
// the next pass reaches the task again. It reports whether the run waits
// (i < 0: the run reached no release approval, nothing to wait for).
func (rl *Releaser) Await(ctx context.Context, prop approval.Proposal, i int) bool {
	if i < 0 {
		return false
	}
	announce := rl.Seq.BeginTask(i)
	rl.waitMark.Store(&releaseMark{planHash: prop.Plan.PlanHash, since: time.Now()})
	p, err := rl.Seq.WriteRelease(ctx, prop, rl.Approvals.Policy.Required)
	if err != nil {
		rl.Metrics.Fail(rl.Env, meter.ReasonState)
		rl.Log.Error(err, "recording the wait for the release approval; trying again at the next pass", "environment", rl.Env, "revision", approval.ShortRevision(prop.Revision))
		return true
	}
	rl.releaseHash, rl.releaseSince = p.PlanHash, time.Now()
	announce(ctx)
	rl.Log.Info("deployed and verified; waiting for the release approval", "environment", rl.Env, "revision", approval.ShortRevision(prop.Revision), "planHash", p.PlanHash)
	st, err := rl.Store.Load(ctx, rl.Env)
	if err != nil { // shown without its notes; the next repropose has them
		rl.Metrics.Fail(rl.Env, meter.ReasonState)
		st = nil
	}
	rl.propose(ctx, prop, p, st)
	return true
}

// propose shows the pending release p of prop on the gate, with the
// notes of st (a rollback's hold, an incident's pin: the environment's as
// it is now, not as it was when the plan was proposed; st nil: read
// without the pin).
func (rl *Releaser) propose(ctx context.Context, prop approval.Proposal, p *approval.Pending, st *state.EnvState) {
	prop.Release = p.ProposedAt
	prop.Notes = nil
	if rl.Manifests != nil {
		prop.Notes = rl.Manifests.Notes(ctx, st)
	}
	if p.Needed() > 1 && len(p.Approvals) > 0 {
		prop.Notes = append(prop.Notes[:len(prop.Notes):len(prop.Notes)], "**"+p.Tally()+".**")
	}
	rl.Tell.Propose(ctx, rl.Gate, prop)
}

// Hold handles, at the start of a pass at s (planned as plan), a
// run that waits for its release approval: s at its revision, or a newer
// revision that changes nothing here (plan is empty: a commit for another
// environment, a README), keeps waiting (shown on the gate again after a
// restart or the repropose period; the pending release written again if
// it went) and the pass ends there (true); a newer revision with changes
// supersedes the wait and the pass goes on (false), with st kept in step.
// (Ending the wait for a revision with nothing to apply would leave the
// deployed versions never released, with no plan left to release them.)
func (rl *Releaser) Hold(ctx context.Context, p *pass.Pass) bool {
	s, envM, plan, st := p.Snap, p.EnvM, p.Plan, p.St
	r, f := st.Sequence, st.InFlight
	if st.Phase != status.PhaseAwaitingRelease || r == nil || f == nil || f.Revision != r.Revision {
		return false
	}
	if s.Revision != r.Revision && !plan.Empty() {
		rl.supersede(ctx, st, s.Revision)
		return false
	}
	rl.Seq.Adopt(r, envM)
	prop, err := inFlightProposal(rl.Env, s, st)
	if err != nil {
		rl.Metrics.Fail(rl.Env, meter.ReasonState)
		rl.Log.Error(err, "reading the plan waiting for its release approval", "environment", rl.Env)
	}
	pend := st.Pending
	if pend == nil || !pend.Release || pend.Revision != r.Revision {
		if pend, err = rl.Seq.WriteRelease(ctx, prop, rl.Approvals.Policy.Required); err != nil {
			rl.Metrics.Fail(rl.Env, meter.ReasonState)
			rl.Log.Error(err, "recording the wait for the release approval", "environment", rl.Env)
			return true
		}
		st.Pending = pend
		rl.Tell.Forget()
	}
	if rl.Tell.Due(prop) {
		rl.propose(ctx, prop, pend, st)
	}
	return true
}

// supersede ends the wait for the release approval in st because
// revision by is newer: the apply is recorded (it was deployed, never
// released), the pending release and the in-flight record cleared, the run
// aborted saying why, and the gate told the plan was superseded.
func (rl *Releaser) supersede(ctx context.Context, st *state.EnvState, by string) {
	f, r := st.InFlight, st.Sequence
	rl.Seq.Adopt(r, nil)
	prop, err := inFlightProposal(rl.Env, gitsource.Snapshot{}, st)
	if err != nil {
		rl.Log.Error(err, "reading the plan superseded while waiting for its release approval", "environment", rl.Env)
	}
	why := "its release approval was " + delivery.SupersededWhy(by)
	now := rl.Now().UTC()
	e := approval.Entry{Revision: f.Revision, PlanHash: f.PlanHash, Changes: f.Changes, Approver: f.Approver, Approvers: f.Approvers,
		Result: approval.ResultSucceeded, Message: "deployed and verified, never released: " + why, HistoryRewritten: prop.Plan.HistoryRewritten,
		Started: f.Started, Finished: now, Verification: delivery.Verifications(rl.Seq.State(), r.Revision)}
	if err := rl.Store.Update(ctx, rl.Env, func(st *state.EnvState) {
		if st.InFlight == nil || st.InFlight.PlanHash != f.PlanHash {
			return // recorded by someone else already
		}
		st.Record(e, rl.Store.HistoryLimit())
		st.InFlight = nil
		if p := st.Pending; p != nil && p.Release && p.Revision == f.Revision {
			st.Pending = nil
		}
		st.Phase = pass.NotApplying(st)
	}); err != nil {
		rl.Metrics.Fail(rl.Env, meter.ReasonState)
		rl.Log.Error(err, "recording the apply whose release approval was superseded", "environment", rl.Env)
		return
	}
	st.InFlight, st.Pending = nil, nil
	st.Phase = st.AtRest()
	rl.Seq.Finish(ctx, sequence.StatusAborted, delivery.Ending{Result: promote.ResultFail, Message: "aborted: " + why})
	rl.Tell.Superseded(ctx, prop, by) // reported again until GitHub takes it
	rl.Log.Info("release approval superseded", "environment", rl.Env, "revision", approval.ShortRevision(f.Revision), "by", approval.ShortRevision(by))
}

// Decide carries out dc on the pending release d at s: a
// rejection, or an approval counted under the policy; once decided, the
// rest of the run goes on (the worker's steps from verify on): the release, or the failure.
func (rl *Releaser) Decide(ctx context.Context, s gitsource.Snapshot, dc pass.Decision, d pass.Decided) {
	prop, p, reply := d.Prop, d.Pending, d.Reply
	who := dc.Who.ID.String()
	if dc.Approve {
		var err error
		if p, err = rl.Approvals.Count(ctx, rl.Store.Store, tally.Vote{PlanHash: dc.PlanHash, Who: dc.Who}); err != nil {
			reply(nil, err)
			return
		}
		if !p.Complete() {
			reply(p, nil)
			prop.Release = p.ProposedAt
			rl.Tell.Tally(ctx, prop, p)
			rl.Log.Info("release approval counted", "environment", rl.Env, "planHash", p.PlanHash, "by", dc.Who.String(), "approvals", p.Tally())
			return
		}
		who = approval.JoinApprovers(p.Approvers())
	}
	if err := rl.Seq.Decide(ctx, delivery.Release{Pending: p, Approve: dc.Approve, Who: who, Reason: dc.Reason}); err != nil {
		reply(nil, err)
		return
	}
	reply(p, nil)
	rl.Log.Info("release decided", "environment", rl.Env, "planHash", p.PlanHash, "approved", dc.Approve, "by", who)
	envM, err := rl.Manifests.Resolve(ctx, s, nil)
	if err != nil {
		// The decision is kept: the next pass continues the run.
		rl.Metrics.Fail(rl.Env, meter.ReasonResolve)
		rl.Log.Error(err, "resolving the manifest to continue the released run; the next pass does", "environment", rl.Env)
		rl.Passes.WakeUp()
		return
	}
	st, err := rl.Store.Load(ctx, rl.Env)
	if err != nil {
		rl.Metrics.Fail(rl.Env, meter.ReasonState)
		rl.Passes.WakeUp()
		return
	}
	rp := &pass.Pass{Snap: s, St: st, EnvM: envM}
	if rl.Passes.ContinueRun(rp) {
		if err := rl.Passes.RunFrom(ctx, rp, pass.StepVerify); err != nil && ctx.Err() == nil {
			rl.Log.Error(err, "releasing", "environment", rl.Env)
		}
	}
	rl.Passes.EndPass(ctx, rp)
}

// TakenBefore reports whether a decision taken at at (on this process's
// monotonic clock; zero: another replica's) on p was taken before p, a
// release approval, began to wait here: it was for the plan before its
// deployment, not for its release.
func (rl *Releaser) TakenBefore(p *approval.Pending, at time.Time) bool {
	m := rl.waitMark.Load()
	return p != nil && p.Release && !at.IsZero() && m != nil && m.planHash == p.PlanHash && at.Before(m.since)
}
