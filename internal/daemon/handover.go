package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/decision"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tally"
)

// A replica that does not lead an environment hands the approvals and
// rejections it takes to the leader through the environment's state, in a
// queue of at most decision.MaxHandovers (internal/decision: the order, the
// leader's pick-up, replicas older than the queue); one more is refused with
// an error matching approval.ErrBusy (the API answers 503 with
// Retry-After), never dropped.

// handOver records dc for the leader when it names the pending plan; the
// leader's worker acts on it within a second (decision.Desk.PickUp).
//
// An approval is counted here first, into the pending record every replica shares (see counter): one that
// leaves the plan short of its required approvers is answered with the tally, and the leader hears only of
// an approval that completes it.
func (ds *dispatcher) handOver(ctx context.Context, env string, dc pass.Decision) (*approval.Pending, error) {
	w := ds.workers[env]
	// A decision this leader's busy worker did not take in time (dc.At
	// set) that finds a release approval which began to wait after it was
	// taken was for the plan before its deployment: stale, as the worker
	// judges it (decision.Desk.Decide).
	stale := func(p *approval.Pending) bool { return w.release.TakenBefore(p, dc.At) }
	if dc.Approve {
		p, err := w.approvals.Count(ctx, ds.store, tally.Vote{PlanHash: dc.PlanHash, Who: dc.Who, Stale: stale})
		if err != nil {
			return nil, err
		}
		if !p.Complete() {
			plan, perr := pass.DecodePlan(w.env, p)
			if perr != nil {
				ds.log.Error(perr, "showing the approvals so far", "environment", env)
			}
			prop := approval.Proposal{Environment: env, Revision: p.Revision, Plan: plan}
			if p.Release {
				prop.Release = p.ProposedAt
			}
			w.tell.Tally(ctx, prop, p)
			return p, nil
		}
	}
	h := state.Handover{ID: handoverID(), Approve: dc.Approve, PlanHash: dc.PlanHash, Approver: dc.Who.ID.String(),
		Reason: dc.Reason, At: ds.clock.Now().UTC()}
	if !dc.Who.ActsFor.IsZero() {
		h.ActsFor = dc.Who.ActsFor.String()
	}
	var (
		pending *approval.Pending
		full    bool
	)
	err := ds.store.Update(ctx, env, func(st *state.EnvState) {
		pending, full = st.Pending, false
		if st.Pending == nil || st.Pending.PlanHash != dc.PlanHash || stale(st.Pending) {
			return
		}
		if len(st.Handovers) >= decision.MaxHandovers {
			full = true
			return
		}
		st.Handovers = append(st.Handovers, h)
	})
	if err != nil {
		return nil, err
	}
	if pending == nil || pending.PlanHash != dc.PlanHash || stale(pending) {
		return nil, &approval.NotPendingError{Environment: env, PlanHash: dc.PlanHash, Pending: pending}
	}
	if full {
		return nil, fmt.Errorf("handing the decision of %s on plan %s to the leader of environment %s: %d decisions wait for it already: %w",
			dc.Who.String(), dc.PlanHash, env, decision.MaxHandovers, approval.ErrBusy)
	}
	ds.log.Info("decision handed to the leader", "environment", env, "planHash", dc.PlanHash, "approve", dc.Approve, "by", dc.Who.String())
	return pending, nil
}

// handoverID is a random identity for a decision handed over.
func handoverID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
