package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/go-logr/logr"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/window"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// gatekeeper is the gate step of an environment's passes (gate.go): from
// the phase and the plan it decides whether to keep waiting (a release
// approval, a plan kept at a newer revision that changes nothing here, a
// plan the deploy windows defer), to settle an environment in sync, to
// continue an interrupted apply, or to propose the plan to the gate, an
// auto-approved one going on to the apply; it withdraws a plan superseded.
// It holds what the gate's judgement needs: the term's store, the policy's
// counter, the deploy windows, the sequence, what the gate is told.
type gatekeeper struct {
	env       string
	log       logr.Logger
	now       func() time.Time
	metrics   *meter.Metrics
	tracer    *tracing.Deploys
	store     *phaseStore
	source    source
	manifests manifests
	approvals *tally.Counter
	windows   *window.Guard
	seq       *delivery.Run
	tell      *herald.Herald
	// gate is told about every plan; allowRewrite (source.allowRewrite)
	// lets a skipConfirmation environment apply a rewritten history.
	gate         approval.Gate
	allowRewrite bool
	// apply records an apply whose patches all landed; release holds a
	// run waiting for its release approval; passes continues a run after
	// its deployment.
	apply   *applier
	release *releaser
	passes  passes

	// kept names the pending plan the last pass kept at a newer revision
	// that changes nothing here, and that revision (keepPending); a
	// decision on it is taken at the plan's revision.
	kept string
	// keptEnv is the pending plan's environment resolved at its revision
	// when kept was decided: both revisions' content never changes, so a
	// later pass with the same key neither resolves nor compares again.
	keptEnv *manifest.Environment
}

// resumable reports whether prop continues the interrupted apply in
// flight in st (cut short by a shutdown) without asking again: same
// revision, and what is left is part of what was approved; it returns its
// approvers. Otherwise it clears the in-flight record (in st too).
func (k *gatekeeper) resumable(ctx context.Context, st *state.EnvState, prop approval.Proposal) ([]string, bool, error) {
	f := st.InFlight
	if f == nil {
		return nil, false, nil
	}
	var approved []reconcile.Change
	if err := json.Unmarshal(f.Changes, &approved); err != nil {
		// Unreadable: nothing can be continued without asking again.
		k.metrics.Fail(k.env, reasonState)
		k.log.Error(err, "decoding the changes of the interrupted apply; planning afresh", "environment", k.env, "planHash", f.PlanHash)
	} else if f.Revision == prop.Revision && subset(prop.Plan.Changes, approved) {
		if len(f.Approvers) == 0 { // written before approvals were counted
			return []string{f.Approver}, true, nil
		}
		return f.Approvers, true, nil
	}
	if err := k.store.Update(ctx, k.env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, notApplying(st) }); err != nil {
		return nil, false, err
	}
	st.InFlight, st.Phase = nil, notApplying(st)
	return nil, false, nil
}

// supersede withdraws st's pending plan (if any): by is the revision that
// replaces it. st is the pass's state, kept in step.
func (k *gatekeeper) supersede(ctx context.Context, st *state.EnvState, by string) {
	pending := st.Pending
	if pending == nil || st.Phase == status.PhaseAwaitingRelease {
		// A release approval ends by a decision or a newer revision
		// (holdRelease), never with the plan that found it.
		return
	}
	plan, perr := decodePlan(k.env, pending)
	if perr != nil {
		// The gate still hears of it, by revision alone.
		k.metrics.Fail(k.env, reasonState)
		k.log.Error(perr, "decoding the superseded plan", "environment", k.env, "planHash", pending.PlanHash)
	}
	if err := k.store.Update(ctx, k.env, func(st *state.EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == pending.PlanHash {
			st.Pending = nil
			if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
				st.Phase = st.AtRest()
			}
		}
	}); err != nil {
		k.metrics.Fail(k.env, reasonState)
		k.log.Error(err, "clearing superseded plan", "environment", k.env)
		return
	}
	st.Pending = nil
	if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
		st.Phase = st.AtRest()
	}
	if by != pending.Revision {
		k.seq.Abort(ctx, st, delivery.SupersededWhy(by))
	}
	prop := approval.Proposal{Environment: k.env, Revision: pending.Revision, Plan: plan}
	k.tell.Superseded(ctx, prop, by)
	k.log.Info("pending plan superseded", "environment", k.env, "planHash", pending.PlanHash, "by", by)
}

// keeps reports whether the last pass kept p, the pending plan, at the
// newer revision rev that changes nothing here (keepPending).
func (k *gatekeeper) keeps(rev string, p *approval.Pending) bool { return k.kept == keptKey(rev, p) }
