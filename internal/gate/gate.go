package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
)

// GateStep decides what the plan calls for, from the environment's phase
// and the plan: keep waiting for a release approval; with nothing to apply,
// continue a run after its deployment or settle what was in flight; continue
// an interrupted apply; or propose the plan to the gate (an auto-approved
// one, and one the gate approves at once, goes on to the apply). p.St is
// kept in step with what it writes (the pending plan, the in-flight record,
// the run), so that the run is decided without reading the state again
// before the first patch.
func (k *Keeper) GateStep(ctx context.Context, p *pass.Pass) error {
	if k.Release.Hold(ctx, p) {
		p.Done = true // waiting for the release approval
		return nil
	}
	if p.Plan.Empty() {
		if k.Passes.ContinueRun(p) {
			return nil // the steps after the deployment go on
		}
		p.Done = true
		return k.inSync(ctx, p)
	}

	if ks, kEnv, kPlan, ok := k.keepPending(ctx, p); ok {
		// A newer revision that changes nothing here: the pending plan
		// stays, at the revision reviewed.
		p.Snap, p.EnvM, p.Plan = ks, kEnv, kPlan
	} else {
		k.kept, k.keptEnv = "", nil
	}
	s, envM, plan, st := p.Snap, p.EnvM, p.Plan, p.St
	log := k.Log.WithValues("environment", k.Env, "revision", approval.ShortRevision(s.Revision))
	if k.skipFailed(ctx, st, s.Revision, plan) {
		// Rolled back once: not applied again until a new revision.
		p.Done = true
		return nil
	}
	prop := approval.Proposal{Environment: k.Env, Revision: s.Revision, RevisionTime: s.Time, Plan: plan}
	approvers, resume, err := k.resumable(ctx, st, prop)
	if err != nil {
		p.Done = true
		return pass.Failed(pass.StepGate, meter.ReasonState, err)
	}
	if resume {
		log.Info("continuing an interrupted apply", "approvers", approvers, "changes", len(plan.Changes))
		p.Job = &pass.Job{Prop: prop, Approvers: approvers, Resumed: st.InFlight}
		return nil
	}
	tasks, err := k.Seq.Tasks(s)
	if err != nil {
		p.Observe(envM, plan, err)
		p.Done = true
		return pass.Failed(pass.StepGate, meter.ReasonResolve, fmt.Errorf("reading the sequence at %s: %w", approval.ShortRevision(s.Revision), err))
	}
	if k.deferredApproved(ctx, p, tasks) {
		return nil // still deferred, or applied now that the windows opened
	}
	// A rewritten history needs a person even where skipConfirmation is
	// set, and so does a sequence with an approval task.
	auto := envM.SkipConfirmation && (plan.HistoryRewritten == "" || k.AllowRewrite) && !delivery.PreApproval(tasks)
	tasks = delivery.WithApproval(tasks, !auto)
	gate := k.Gate
	if auto {
		gate = autoGate
		if by := pinnedBy(st.Pin, plan); by != "" {
			gate = approval.AutoAs(by) // the history names who rolled back, not skipConfirmation
		}
	} else if k.Manifests != nil {
		// Only a plan awaiting approval shows its notes (the gate's
		// Propose): an auto-approved one goes to its first patch without
		// reading the hold (a lock read of ~100 ms: a consistent list).
		prop.Notes = k.Manifests.Notes(ctx, st)
	}
	if pp := st.Pending; st.Phase == status.PhaseAwaitingApproval && pp != nil && pp.PlanHash == plan.PlanHash && pp.Revision == s.Revision {
		if !k.Tell.Due(prop) {
			p.Done = true
			return nil // proposed already; waiting for a decision
		}
		// Stored but not (yet) accepted by the gate: GitHub was down when it
		// was proposed, or this process is new; or it was proposed a
		// repropose period ago. Gates' Propose is idempotent.
		if pp.Needed() > 1 && len(pp.Approvals) > 0 {
			// A run the gate makes again shows the approvals counted so far.
			prop.Notes = append(slices.Clip(prop.Notes), "**"+pp.Tally()+".**")
		} else {
			prop.Notes = append(slices.Clip(prop.Notes), tally.Note(pp)...)
		}
		k.Seq.Begin(ctx, delivery.Start{State: p.St, Env: p.EnvM, Prop: prop, Tasks: tasks, Save: !auto})
		return k.proposeOrApply(ctx, p, gate, prop)
	}
	if rejected(st.History, s.Revision, plan.PlanHash) {
		// Rejected once: never proposed again. A new revision or a plan that
		// differs (the cluster drifted) has another hash and is proposed.
		k.Supersede(ctx, st, s.Revision)
		p.Done = true
		return nil
	}
	k.Supersede(ctx, st, s.Revision)
	if auto {
		wait, err := k.autoWaits(ctx, p, prop)
		if err != nil {
			return pass.Failed(pass.StepGate, meter.ReasonState, err)
		}
		if wait {
			return nil // applied when the windows open
		}
	}
	if !auto {
		raw, err := json.Marshal(plan)
		if err != nil {
			p.Done = true
			return pass.Failed(pass.StepGate, meter.ReasonState, fmt.Errorf("encoding plan: %w", err))
		}
		pend := &approval.Pending{Revision: s.Revision, PlanHash: plan.PlanHash, Plan: raw, ProposedAt: k.Now().UTC(),
			Required: k.Approvals.Policy.Required}
		k.Approvals.Shows(ctx, st, pend)
		prop.Notes = append(slices.Clip(prop.Notes), tally.Note(pend)...) // the check run's first text says them
		if err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) { st.Pending, st.Phase = pend, status.PhaseAwaitingApproval }); err != nil {
			p.Done = true
			return pass.Failed(pass.StepGate, meter.ReasonState, err)
		}
		st.Phase = status.PhaseAwaitingApproval
	}
	k.Seq.Begin(ctx, delivery.Start{State: p.St, Env: p.EnvM, Prop: prop, Tasks: tasks, Save: !auto})
	if !auto {
		k.Tracer.Proposed(ctx, k.Env, plan.PlanHash) // the approval's wait links to this pass
	}
	if err := k.proposeOrApply(ctx, p, gate, prop); err != nil || p.Job != nil {
		return err
	}
	log.Info("plan waiting for approval", "planHash", plan.PlanHash, "changes", len(plan.Changes))
	return nil
}

// proposeOrApply proposes prop to gate: a gate that approves at once (Auto)
// lets the apply through, else the pass ends waiting for a decision.
func (k *Keeper) proposeOrApply(ctx context.Context, p *pass.Pass, gate approval.Gate, prop approval.Proposal) error {
	if dec := k.Tell.Propose(ctx, gate, prop); dec.Approved {
		p.Job = &pass.Job{Prop: prop, Approvers: []string{dec.Approver}}
		return nil
	}
	p.Done = true
	return nil
}

// inSync settles an environment whose plan is empty: an apply in flight
// whose patches all landed is recorded (deploy.Applier.RecordLanded), a pending plan
// withdrawn (nothing is left to apply) and the in-flight record cleared.
func (k *Keeper) inSync(ctx context.Context, p *pass.Pass) error {
	st := p.St
	if st.InFlight != nil {
		k.Apply.RecordLanded(ctx, p)
		// It may have written the history and cleared the in-flight
		// record and the pending plan its entry settles: the rest goes on
		// from the state as it is now.
		fresh, err := k.Store.Load(ctx, k.Env)
		if err != nil {
			return pass.Failed(pass.StepGate, meter.ReasonState, err)
		}
		st, p.St = fresh, fresh
	}
	k.Supersede(ctx, st, "")
	if st.InFlight == nil && st.Phase == status.PhaseDeferred {
		// Deferred, and nothing is left to apply (someone else deployed it).
		if err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) {
			if st.Phase == status.PhaseDeferred && st.Pending == nil {
				st.Phase = st.AtRest()
			}
		}); err != nil {
			return pass.Failed(pass.StepGate, meter.ReasonState, err)
		}
		st.Phase = st.AtRest()
	}
	if st.InFlight != nil {
		// What was in flight is in place, and nothing is pending.
		if err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, st.AtRest() }); err != nil {
			return pass.Failed(pass.StepGate, meter.ReasonState, err)
		}
	}
	return nil
}
