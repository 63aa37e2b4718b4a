package decision

import (
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// A replica that does not lead an environment hands the approvals and
// rejections it takes to the leader through the environment's state: each
// is appended to a queue (the state's handovers.json), and the leader's
// worker takes them one at a time within a second (Desk.PickUp), removing
// from the queue only the decision it took, by identity, with the state's
// fenced, resourceVersion-checked writes. Two decisions handed over in the
// same second (two people of an approvals.required: 2 policy, an approve and
// a reject, two standbys) are both acted on.
//
// The queue holds at most MaxHandovers decisions; one more is refused with
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

// MaxHandovers is how many decisions may wait for the leader in one
// environment.
const MaxHandovers = 16

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
