package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// applyOrReplan applies prop (approved by approver). When the cluster or
// the locks changed since prop was planned, pkg/reconcile refuses it; the
// worker then plans again at once, in a new pass, rather than acting on the
// plan made inside the refused Apply.
//
// resumed, when not nil, is the in-flight record of the interrupted apply
// prop continues (see apply).
func (w *worker) applyOrReplan(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, prop approval.Proposal, approvers []string, resumed *approval.InFlight) error {
	_, err := w.apply(ctx, s, envM, prop, approvers, nil, resumed)
	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) {
		if ctx.Err() == nil {
			w.wakeUp()
		}
		return nil
	}
	return err
}

// apply applies prop's plan, recording it as in flight first and in the
// history after, and returns the result. A shutdown lets the patches in
// flight finish (up to the apply grace) and records the apply as
// interrupted; the in-flight record lets the next leader continue what is
// left without asking again. started (if not nil) is called once the apply
// is under way: pkg/reconcile planned again, found the same planHash and
// patched a first workload (or finished).
//
// Apply's own plan is the only one an apply makes. When it differs from
// prop's (the cluster or the locks changed), apply returns its
// *reconcile.StalePlanError, which holds the new plan, and records nothing;
// when it fails before starting, with started given (a decision: the
// caller answers with the error), it records nothing either.
//
// resumed, when not nil, is the in-flight record of an interrupted apply
// that prop's plan (what is left of it) continues: apply patches only what
// prop's plan holds, but keeps resumed as the in-flight record and records,
// reports and counts the apply as the plan that was approved (resumed's
// planHash, changes, start), so that the history holds one entry for it,
// whatever number of leaders it took.
func (w *worker) apply(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, prop approval.Proposal, approvers []string, started func(), resumed *approval.InFlight) (*reconcile.Result, error) {
	log := w.log.WithValues("environment", w.env, "revision", short(s.Revision), "planHash", prop.Plan.PlanHash)
	begun := w.now().UTC()
	approver := approval.JoinApprovers(approvers)
	// applyHash is the plan pkg/reconcile applies: prop's, what is left.
	applyHash := prop.Plan.PlanHash
	var f *approval.InFlight // a new apply's in-flight record
	if resumed != nil {
		// The remainder is applied; the approved plan is what the
		// in-flight record already says, and it stays as it is.
		whole, err := approvedProposal(prop, resumed)
		if err != nil {
			w.metrics.fail(w.env, "state")
			return nil, err
		}
		log = log.WithValues("approvedPlanHash", resumed.PlanHash)
		prop, begun = whole, resumed.Started
	} else {
		f = &approval.InFlight{Revision: s.Revision, PlanHash: prop.Plan.PlanHash, Approver: approver, Changes: changesJSON(prop.Plan.Changes), Started: begun}
		if len(approvers) > 1 {
			f.Approvers = approvers
		}
	}
	// The in-flight record (unless resumed) and the run's deployment task
	// begun, in one write.
	if err := w.approved(ctx, envM, prop, approver, f); err != nil {
		w.metrics.fail(w.env, "state")
		if f != nil {
			return nil, fmt.Errorf("recording apply before starting it: %w", err)
		}
		// Resumed: the in-flight record is there already; the run is
		// written again at its next step.
		w.log.Error(err, "recording the sequence state", "environment", w.env, "revision", short(s.Revision))
	}
	w.applying.Store(true)
	defer w.applying.Store(false)
	log.Info("applying", "approver", approver, "changes", len(prop.Plan.Changes))
	var under sync.Once
	startedReported := make(chan struct{})
	underWay := func() {
		under.Do(func() {
			if started != nil {
				started()
			}
			// The gate hears of it beside the apply, and before its outcome.
			go func() {
				defer close(startedReported)
				w.startedGate(context.WithoutCancel(ctx), prop, approver)
			}()
		})
	}
	res, err := w.applyWithGrace(ctx, w.request(s, envM), applyHash, func(reconcile.Progress) { underWay() })
	// Record and report even when ctx has ended (a shutdown).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()

	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) || (err != nil && res == nil && started != nil) {
		if errors.As(err, &stale) {
			log.Info("plan changed before it could be applied", "now", stale.Got)
		} else {
			w.metrics.fail(w.env, "plan")
		}
		if resumed != nil {
			// The approved plan stays in flight: the next pass continues
			// it when what is left is still part of it (resumable), or
			// clears it.
			return res, err
		}
		if cerr := w.store.Update(rctx, w.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, notApplying(st) }); cerr != nil {
			w.metrics.fail(w.env, "state")
			return res, errors.Join(err, fmt.Errorf("clearing the apply that did not start: %w", cerr))
		}
		return res, err
	}
	underWay()
	out := outcome(approver, res, err, ctx.Err() != nil, begun, w.now().UTC())
	if len(approvers) > 1 {
		out.Approvers = approvers
	}
	out, waiting := w.deployed(ctx, prop, res, out)
	<-startedReported
	if waiting {
		// In flight until the release approval decides (release.go).
		w.writeStatus(rctx, s, envM, appliedPlan(res), nil)
		return res, nil
	}
	return res, w.settle(ctx, s, envM, prop, res, out)
}

// settle ends the apply of prop (res: its result, nil when the run was
// continued by another process or after its release approval) as out says:
// rolled back when out failed and the environment says so (see
// rollbackCause), else recorded in the history and reported to the gate.
// The error says why the apply failed.
func (w *worker) settle(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, prop approval.Proposal, res *reconcile.Result, out approval.Outcome) error {
	log := w.log.WithValues("environment", w.env, "revision", short(prop.Revision), "planHash", prop.Plan.PlanHash)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if cause, ok := w.rollbackCause(prop, out, res); ok {
		w.metrics.fail(w.env, "apply")
		log.Info("apply failed; rolling it back", "message", out.Message)
		e := entryOf(prop, out, resolvedManifest(s, envM))
		e.Verification = w.verifications(prop.Revision)
		if rerr := w.rollBack(ctx, e, cause); rerr != nil {
			return fmt.Errorf("applying revision %s: %s; %w", short(prop.Revision), out.Message, rerr)
		}
		return fmt.Errorf("applying revision %s: %s; rolled back", short(prop.Revision), out.Message)
	}
	applied := w.recordApply(rctx, prop, out, resolvedManifest(s, envM))
	w.completed(rctx, prop, out)
	log.Info("applied", "result", out.Result, "changes", applied, "duration", out.Finished.Sub(out.Started).String())
	switch out.Result {
	case approval.ResultFailed:
		w.metrics.fail(w.env, "apply")
		return fmt.Errorf("applying revision %s: %s", short(prop.Revision), out.Message)
	case approval.ResultSucceeded:
		// Desired is live now: the status follows from the plan without
		// planning again.
		if res != nil {
			w.writeStatus(rctx, s, envM, appliedPlan(res), nil)
		}
	}
	return nil
}

// approvedProposal is prop with the plan resumed was approved as: its
// planHash and changes (prop's plan holds what is left of them).
func approvedProposal(prop approval.Proposal, resumed *approval.InFlight) (approval.Proposal, error) {
	var changes []reconcile.Change
	if err := json.Unmarshal(resumed.Changes, &changes); err != nil {
		return prop, fmt.Errorf("decoding the changes of the interrupted apply %s: %w", resumed.PlanHash, err)
	}
	plan := *prop.Plan
	plan.PlanHash, plan.Changes = resumed.PlanHash, changes
	prop.Plan = &plan
	return prop, nil
}

// appliedPlan is res's plan once res succeeded: its changes are live.
func appliedPlan(res *reconcile.Result) *reconcile.Plan {
	p := *res.Plan
	p.Unchanged += len(p.Changes)
	p.Changes = nil
	p.PlanHash = reconcile.Hash(p.Environment, p.Revision, nil)
	return &p
}

// applyWithGrace applies planHash, reporting progress; when ctx ends, the
// patches in flight get the apply grace to finish before the apply is
// cancelled (none when the Lease was lost: see graceful).
func (w *worker) applyWithGrace(ctx context.Context, req reconcile.Request, planHash string, progress func(reconcile.Progress)) (*reconcile.Result, error) {
	actx, cancel := w.graceful(ctx)
	defer cancel()
	return w.reconcileApply(actx, req, planHash, reconcile.WithProgress(progress))
}

// outcome is how an apply that started at started ended at finished.
func outcome(approver string, res *reconcile.Result, err error, interrupted bool, started, finished time.Time) approval.Outcome {
	out := approval.Outcome{Approver: approver, Apply: res, Started: started, Finished: finished, Result: approval.ResultSucceeded}
	switch {
	case interrupted:
		out.Result, out.Message = approval.ResultInterrupted, "shut down during the apply; the next leader plans again and applies what is left"
	case err != nil:
		out.Result, out.Message = approval.ResultFailed, err.Error()
	case res.Failed():
		out.Result, out.Message = approval.ResultFailed, failureSummary(res)
	case res.Plan != nil && len(res.Plan.UnreachableTargets()) > 0:
		// What the services need in a target that did not answer is
		// unknown: the environment is not deployed, however well the
		// other targets went.
		out.Result, out.Message = approval.ResultFailed, unreachableSummary(res)
	}
	return out
}

// unreachableSummary says which targets an otherwise successful apply could
// not reach, and why.
func unreachableSummary(res *reconcile.Result) string {
	applied := 0
	for _, wr := range res.Workloads {
		if wr.Outcome != reconcile.OutcomeFailed && wr.Outcome != reconcile.OutcomeBlocked {
			applied++
		}
	}
	var why []string
	for _, t := range res.Plan.UnreachableTargets() {
		for _, pr := range res.Plan.Problems {
			if pr.Unreachable && pr.Target == t {
				why = append(why, pr.Message)
				break
			}
		}
	}
	return fmt.Sprintf("%d workload(s) deployed, but its services were not planned in %d target(s): %s", applied, len(why), joinMax(why, 5))
}

// recordApply writes out into the history (clearing the in-flight record
// unless the apply was interrupted: the next leader continues it) and the
// metrics, and returns the number of changes applied. m is the resolved
// manifest the entry keeps.
func (w *worker) recordApply(ctx context.Context, prop approval.Proposal, out approval.Outcome, m *approval.Manifest) int {
	e := approval.Entry{Revision: prop.Revision, PlanHash: prop.Plan.PlanHash, Changes: changesJSON(prop.Plan.Changes), Approver: out.Approver,
		Approvers: out.Approvers, Result: out.Result, Message: out.Message, HistoryRewritten: prop.Plan.HistoryRewritten, Started: out.Started, Finished: out.Finished,
		Manifest: m, Verification: w.verifications(prop.Revision), ReleasedBy: w.releasedBy(prop.Revision)}
	applied := 0
	if out.Apply != nil {
		var err error
		if e.Workloads, err = json.Marshal(out.Apply.Workloads); err != nil {
			w.log.Error(err, "encoding the workload results for the history", "environment", w.env)
		}
		for _, wr := range out.Apply.Workloads {
			if wr.Outcome.Applied() {
				applied += len(wr.Changes)
			}
		}
	}
	w.metrics.addApplied(w.env, applied)
	// Recorded, the in-flight record and the pending plan it settles
	// cleared, and the phase at rest, in one write; an interrupted apply
	// stays in flight (and in its phase) for the next leader.
	err := w.store.Update(ctx, w.env, func(st *state.EnvState) {
		st.Record(e, w.store.HistoryLimit())
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
		if out.Result != approval.ResultInterrupted {
			if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
				st.InFlight = nil
			}
			st.Phase = notApplying(st)
		}
	})
	if err != nil {
		w.metrics.fail(w.env, "state")
		w.log.Error(err, "recording apply result", "environment", w.env, "planHash", e.PlanHash)
	}
	w.metrics.setPending(w.env, false)
	return applied
}

// startedGate tells the gate, when it is an approval.Starter, that prop's apply is under way; a failure is
// logged and counted.
func (w *worker) startedGate(ctx context.Context, prop approval.Proposal, approver string) {
	s, ok := w.gate.(approval.Starter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Started(ctx, prop, approver); err != nil {
		w.metrics.fail(w.env, "gate")
		w.log.Error(err, "reporting the start of the apply to the gate", "environment", w.env, "planHash", prop.Plan.PlanHash)
	}
}

// completed reports how prop ended to the gate; a failure is logged and counted, and the outcome kept in
// the state to report again (unreported.go).
func (w *worker) completed(ctx context.Context, prop approval.Proposal, out approval.Outcome) {
	if err := w.gate.Completed(ctx, prop, out); err != nil {
		w.metrics.fail(w.env, "gate")
		w.log.Error(err, "reporting the outcome to the gate", "environment", w.env, "planHash", prop.Plan.PlanHash, "result", out.Result)
		w.owe(ctx, unreportedOutcome(prop, out), err)
	}
}

// subset reports whether every change in part was approved in whole: same
// workload, container and target image (the running image, From, may differ
// when an apply was cut short).
func subset(part, whole []reconcile.Change) bool {
	type key struct {
		w         reconcile.WorkloadKey
		container string
		to        string
	}
	in := make(map[key]bool, len(whole))
	for _, c := range whole {
		in[key{c.Key(), c.Container, c.To}] = true
	}
	for _, c := range part {
		if !in[key{c.Key(), c.Container, c.To}] {
			return false
		}
	}
	return true
}
