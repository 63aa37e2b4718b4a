package gate

import (
	"context"
	"encoding/json"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/deploy"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/release"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tally"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/window"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Keeper is the gate step of an environment's passes (gate.go): from the
// phase and the plan it decides whether to keep waiting (a release
// approval, a plan kept at a newer revision that changes nothing here, a
// plan the deploy windows defer), to settle an environment in sync, to
// continue an interrupted apply, or to propose the plan to the gate, an
// auto-approved one going on to the apply; it withdraws a plan superseded.
// It holds what the gate's judgement needs: the term's store, the policy's
// counter, the deploy windows, the sequence, what the gate is told.
type Keeper struct {
	Config

	// kept names the pending plan the last pass kept at a newer revision
	// that changes nothing here, and that revision (keepPending); a
	// decision on it is taken at the plan's revision.
	kept string
	// keptEnv is the pending plan's environment resolved at its revision
	// when kept was decided: both revisions' content never changes, so a
	// later pass with the same key neither resolves nor compares again.
	keptEnv *manifest.Environment
}

// Config is what a Keeper is given by the worker.
type Config struct {
	pass.Room
	Tracer    *tracing.Deploys
	Source    pass.Source
	Manifests pass.Manifests
	Approvals *tally.Counter
	Windows   *window.Guard
	Seq       *delivery.Run
	Tell      *herald.Herald
	// Gate is told about every plan; AllowRewrite (source.allowRewrite)
	// lets a skipConfirmation environment apply a rewritten history.
	Gate         approval.Gate
	AllowRewrite bool
	// Apply records an apply whose patches all landed; Release holds a
	// run waiting for its release approval; Passes continues a run after
	// its deployment.
	Apply   *deploy.Applier
	Release *release.Releaser
	Passes  pass.Runner
}

// New makes the gate step of c.Env.
func New(c Config) *Keeper { return &Keeper{Config: c} }

// autoGate decides for skipConfirmation environments.
var autoGate = approval.Auto()

// resumable reports whether prop continues the interrupted apply in
// flight in st (cut short by a shutdown) without asking again: same
// revision, and what is left is part of what was approved; it returns its
// approvers. Otherwise it clears the in-flight record (in st too).
func (k *Keeper) resumable(ctx context.Context, st *state.EnvState, prop approval.Proposal) ([]string, bool, error) {
	f := st.InFlight
	if f == nil {
		return nil, false, nil
	}
	var approved []reconcile.Change
	if err := json.Unmarshal(f.Changes, &approved); err != nil {
		// Unreadable: nothing can be continued without asking again.
		k.Metrics.Fail(k.Env, meter.ReasonState)
		k.Log.Error(err, "decoding the changes of the interrupted apply; planning afresh", "environment", k.Env, "planHash", f.PlanHash)
	} else if f.Revision == prop.Revision && subset(prop.Plan.Changes, approved) {
		if len(f.Approvers) == 0 { // written before approvals were counted
			return []string{f.Approver}, true, nil
		}
		return f.Approvers, true, nil
	}
	if err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) { st.InFlight, st.Phase = nil, pass.NotApplying(st) }); err != nil {
		return nil, false, err
	}
	st.InFlight, st.Phase = nil, pass.NotApplying(st)
	return nil, false, nil
}

// Supersede withdraws st's pending plan (if any): by is the revision that
// replaces it. st is the pass's state, kept in step.
func (k *Keeper) Supersede(ctx context.Context, st *state.EnvState, by string) {
	pending := st.Pending
	if pending == nil || st.Phase == status.PhaseAwaitingRelease {
		// A release approval ends by a decision or a newer revision
		// (release.Releaser.Hold), never with the plan that found it.
		return
	}
	plan, perr := pass.DecodePlan(k.Env, pending)
	if perr != nil {
		// The gate still hears of it, by revision alone.
		k.Metrics.Fail(k.Env, meter.ReasonState)
		k.Log.Error(perr, "decoding the superseded plan", "environment", k.Env, "planHash", pending.PlanHash)
	}
	if err := k.Store.Update(ctx, k.Env, func(st *state.EnvState) {
		if st.Pending != nil && st.Pending.PlanHash == pending.PlanHash {
			st.Pending = nil
			if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
				st.Phase = st.AtRest()
			}
		}
	}); err != nil {
		k.Metrics.Fail(k.Env, meter.ReasonState)
		k.Log.Error(err, "clearing superseded plan", "environment", k.Env)
		return
	}
	st.Pending = nil
	if st.Phase == status.PhaseAwaitingApproval || st.Phase == status.PhaseDeferred {
		st.Phase = st.AtRest()
	}
	if by != pending.Revision {
		k.Seq.Abort(ctx, st, delivery.SupersededWhy(by))
	}
	prop := approval.Proposal{Environment: k.Env, Revision: pending.Revision, Plan: plan}
	k.Tell.Superseded(ctx, prop, by)
	k.Log.Info("pending plan superseded", "environment", k.Env, "planHash", pending.PlanHash, "by", by)
}

// Keeps reports whether the last pass kept p, the pending plan, at the
// newer revision rev that changes nothing here (keepPending).
func (k *Keeper) Keeps(rev string, p *approval.Pending) bool { return k.kept == keptKey(rev, p) }
