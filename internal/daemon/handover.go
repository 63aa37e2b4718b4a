package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tally"
)

// A replica that does not lead an environment hands the approvals and
// rejections it takes to the leader through the environment's state: each
// is appended to a queue (the state's handovers.json), and the leader's
// worker takes them one at a time within a second (worker.pickUp), removing
// from the queue only the decision it took, by identity, with the state's
// fenced, resourceVersion-checked writes. Two decisions handed over in the
// same second (two people of an approvals.required: 2 policy, an approve and
// a reject, two standbys) are both acted on.
//
// The queue holds at most maxHandovers decisions; one more is refused with
// an error matching approval.ErrBusy (the API answers 503 with Retry-After),
// never dropped.
//
// Order: the rejections waiting are taken first, then the approvals, each in
// the order they were handed over. An approval and a rejection of the same
// plan waiting together therefore always end rejected: the rejection is
// recorded, and the approval then finds nothing pending. (An approval the
// leader took before the rejection arrived has begun its apply: the
// rejection then finds nothing pending, as it would on the leader.)
//
// Replicas older than the queue kept one decision, in handover.json. A
// newer replica reads that slot as one more decision waiting (it is how an
// older standby hands over during a rolling upgrade), and writes the newest
// decision of its queue there as well, so that an older leader still acts
// on it as it did before. An older replica knows nothing of the queue: it
// acts on that newest decision only, and any state write it makes drops
// the rest of the queue. Decisions are lost that way only while replicas
// of both kinds run; finish the rollout before asking people to approve.

// maxHandovers is how many decisions may wait for the leader in one
// environment.
const maxHandovers = 16

// handOver records dc for the leader when it names the pending plan; the
// leader's worker acts on it within a second (see worker.pickUp).
//
// An approval is counted here first, into the pending record every replica shares (see counter): one that
// leaves the plan short of its required approvers is answered with the tally, and the leader hears only of
// an approval that completes it.
func (ds *dispatcher) handOver(ctx context.Context, env string, dc pass.Decision) (*approval.Pending, error) {
	w := ds.workers[env]
	// A decision this leader's busy worker did not take in time (dc.At
	// set) that finds a release approval which began to wait after it was
	// taken was for the plan before its deployment: stale, as the worker
	// judges it (decide).
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
		if len(st.Handovers) >= maxHandovers {
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
			dc.Who.String(), dc.PlanHash, env, maxHandovers, approval.ErrBusy)
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

// handoverPrincipal is who took h, typed: a bare approver written by a replica older than typed
// identities reads as a legacy ID, which the policy takes for no typed identity.
func handoverPrincipal(h state.Handover) identity.Principal {
	p := identity.Principal{ID: identity.Parse(h.Approver)}
	if h.ActsFor != "" {
		p.ActsFor = identity.Parse(h.ActsFor)
	}
	return p
}

// nextHandover is the decision the leader takes next from q: the first
// rejection, else the first approval.
func nextHandover(q []state.Handover) (state.Handover, bool) {
	for _, h := range q {
		if !h.Approve {
			return h, true
		}
	}
	if len(q) == 0 {
		return state.Handover{}, false
	}
	return q[0], true
}

// takeHandover removes dec from the queue, and only dec: decisions handed
// over since dec was read stay for the next pick-up, so one that was
// answered "accepted" is never wiped.
func takeHandover(dec state.Handover) func(*state.EnvState) {
	return func(st *state.EnvState) {
		q := st.Handovers[:0:0]
		for _, h := range st.Handovers {
			if !h.Same(dec) {
				q = append(q, h)
			}
		}
		if len(q) == 0 {
			q = nil
		}
		st.Handovers = q
	}
}
