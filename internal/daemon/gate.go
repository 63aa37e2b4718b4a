package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
)

// gateStep decides what the plan calls for, from the environment's phase
// and the plan: keep waiting for a release approval; with nothing to apply,
// continue a run after its deployment or settle what was in flight; continue
// an interrupted apply; or propose the plan to the gate (an auto-approved
// one, and one the gate approves at once, goes on to the apply). p.st is
// kept in step with what it writes (the pending plan, the in-flight record,
// the run), so that the run is decided without reading the state again
// before the first patch.
func (k *gatekeeper) gateStep(ctx context.Context, p *pass) error {
	if k.release.hold(ctx, p) {
		p.done = true // waiting for the release approval
		return nil
	}
	if p.plan.Empty() {
		if k.passes.continueRun(p) {
			return nil // the steps after the deployment go on
		}
		p.done = true
		return k.inSync(ctx, p)
	}

	if ks, kEnv, kPlan, ok := k.keepPending(ctx, p); ok {
		// A newer revision that changes nothing here: the pending plan
		// stays, at the revision reviewed.
		p.snap, p.envM, p.plan = ks, kEnv, kPlan
	} else {
		k.kept, k.keptEnv = "", nil
	}
	s, envM, plan, st := p.snap, p.envM, p.plan, p.st
	log := k.log.WithValues("environment", k.env, "revision", approval.ShortRevision(s.Revision))
	if k.skipFailed(ctx, st, s.Revision, plan) {
		// Rolled back once: not applied again until a new revision.
		p.done = true
		return nil
	}
	prop := approval.Proposal{Environment: k.env, Revision: s.Revision, RevisionTime: s.Time, Plan: plan}
	approvers, resume, err := k.resumable(ctx, st, prop)
	if err != nil {
		p.done = true
		return failed(stepGate, reasonState, err)
	}
	if resume {
		log.Info("continuing an interrupted apply", "approvers", approvers, "changes", len(plan.Changes))
		p.job = &applyJob{prop: prop, approvers: approvers, resumed: st.InFlight}
		return nil
	}
	tasks, err := k.seq.Tasks(s)
	if err != nil {
		p.observe(envM, plan, err)
		p.done = true
		return failed(stepGate, reasonResolve, fmt.Errorf("reading the sequence at %s: %w", approval.ShortRevision(s.Revision), err))
	}
	if k.deferredApproved(ctx, p, tasks) {
		return nil // still deferred, or applied now that the windows opened
	}
	// A rewritten history needs a person even where skipConfirmation is
	// set, and so does a sequence with an approval task.
	auto := envM.SkipConfirmation && (plan.HistoryRewritten == "" || k.allowRewrite) && !delivery.PreApproval(tasks)
	tasks = delivery.WithApproval(tasks, !auto)
	gate := k.gate
	if auto {
		gate = autoGate
		if by := pinnedBy(st.Pin, plan); by != "" {
			gate = approval.AutoAs(by) // the history names who rolled back, not skipConfirmation
		}
	} else if k.manifests != nil {
		// Only a plan awaiting approval shows its notes (the gate's
		// Propose): an auto-approved one goes to its first patch without
		// reading the hold (a lock read of ~100 ms: a consistent list).
		prop.Notes = k.manifests.Notes(ctx, st)
	}
	if pp := st.Pending; st.Phase == status.PhaseAwaitingApproval && pp != nil && pp.PlanHash == plan.PlanHash && pp.Revision == s.Revision {
		if !k.tell.Due(prop) {
			p.done = true
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
		k.seq.Begin(ctx, delivery.Start{State: p.st, Env: p.envM, Prop: prop, Tasks: tasks, Save: !auto})
		return k.proposeOrApply(ctx, p, gate, prop)
	}
	if rejected(st.History, s.Revision, plan.PlanHash) {
		// Rejected once: never proposed again. A new revision or a plan that
		// differs (the cluster drifted) has another hash and is proposed.
		k.supersede(ctx, st, s.Revision)
		p.done = true
		return nil
	}
	k.supersede(ctx, st, s.Revision)
	if auto {
		wait, err := k.autoWaits(ctx, p, prop)
		if err != nil {
			return failed(stepGate, reasonState, err)
		}
		if wait {
			return nil // applied when the windows open
		}
	}
	if !auto {
		raw, err := json.Marshal(plan)
		if err != nil {
			p.done = true
			return failed(stepGate, reasonState, fmt.Errorf("encoding plan: %w", err))
		}
		pend := &approval.Pending{Revision: s.Revision, PlanHash: plan.PlanHash, Plan: raw, ProposedAt: k.now().UTC(),
			Required: k.approvals.Policy.Required}
		k.approvals.Shows(ctx, st, pend)
		prop.Notes = append(slices.Clip(prop.Notes), tally.Note(pend)...) // the check run's first text says them
		if err := k.store.Update(ctx, k.env, func(st *state.EnvState) { st.Pending, st.Phase = pend, status.PhaseAwaitingApproval }); err != nil {
			p.done = true
			return failed(stepGate, reasonState, err)
		}
		st.Phase = status.PhaseAwaitingApproval
	}
	k.seq.Begin(ctx, delivery.Start{State: p.st, Env: p.envM, Prop: prop, Tasks: tasks, Save: !auto})
	if !auto {
		k.tracer.Proposed(ctx, k.env, plan.PlanHash) // the approval's wait links to this pass
	}
	if err := k.proposeOrApply(ctx, p, gate, prop); err != nil || p.job != nil {
		return err
	}
	log.Info("plan waiting for approval", "planHash", plan.PlanHash, "changes", len(plan.Changes))
	return nil
}

// proposeOrApply proposes prop to gate: a gate that approves at once (Auto)
// lets the apply through, else the pass ends waiting for a decision.
func (k *gatekeeper) proposeOrApply(ctx context.Context, p *pass, gate approval.Gate, prop approval.Proposal) error {
	if dec := k.tell.Propose(ctx, gate, prop); dec.Approved {
		p.job = &applyJob{prop: prop, approvers: []string{dec.Approver}}
		return nil
	}
	p.done = true
	return nil
}

// inSync settles an environment whose plan is empty: an apply in flight
// whose patches all landed is recorded (recordLanded), a pending plan
// withdrawn (nothing is left to apply) and the in-flight record cleared.
func (k *gatekeeper) inSync(ctx context.Context, p *pass) error {
	st := p.st
	if st.InFlight != nil {
		k.apply.recordLanded(ctx, p)
		// It may have written the history and cleared the in-flight
		// record and the pending plan its entry settles: the rest goes on
		// from the state as it is now.
		fresh, err := k.store.Load(ctx, k.env)
		if err != nil {
			return failed(stepGate, reasonState, err)
		}
		st, p.st = fresh, fresh
	}
	k.supersede(ctx, st, "")
	if st.InFlight == nil && st.Phase == status.PhaseDeferred {
		// Deferred, and nothing is left to apply (someone else deployed it).
		if err := k.store.Update(ctx, k.env, func(st *state.EnvState) {
			if st.Phase == status.PhaseDeferred && st.Pending == nil {
				st.Phase = st.AtRest()
			}
		}); err != nil {
			return failed(stepGate, reasonState, err)
		}
		st.Phase = st.AtRest()
	}
	if st.InFlight != nil {
		// What was in flight is in place, and nothing is pending.
		if err := k.store.Update(ctx, k.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, st.AtRest() }); err != nil {
			return failed(stepGate, reasonState, err)
		}
	}
	return nil
}
