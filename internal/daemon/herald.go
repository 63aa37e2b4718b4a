package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
)

// herald is what an environment's gate is told, and what it was told last:
// plans proposed (and when, so that a plan still pending is proposed again
// after the repropose period, or at once when the gate refused it), applies
// started, outcomes, tallies and plans superseded. A report the gate refuses
// is logged, counted and, for an outcome, kept in the state to be reported
// again (internal/outbox). The worker and its steps tell the gate through it
// only.
type herald struct {
	env       string
	gate      approval.Gate
	owed      *outbox.Queue
	metrics   *meter.Metrics
	log       logr.Logger
	now       func() time.Time
	repropose time.Duration

	// proposed is the pending plan (revision and planHash) the gate last
	// accepted, at proposedAt; a pending plan the gate has not accepted
	// (Propose failed, or a restart) is proposed again at each pass, and one
	// it accepted again after WithRepropose's period, so that the gate can
	// repair what it shows (a check run whose click was lost with its replica).
	proposed   string
	proposedAt time.Time
	// rateLimited is the gate's last refusal for a rate limit (nil once
	// a Propose went through); the status names it until it ends.
	rateLimited *approval.RateLimitedError
}

// propose asks gate (the environment's, or the one deciding for
// skipConfirmation) about prop and remembers a plan it accepted, so that a
// plan whose Propose failed is proposed again at the next pass. A failure is
// logged and counted and leaves the plan pending.
func (h *herald) propose(ctx context.Context, gate approval.Gate, prop approval.Proposal) approval.Decision {
	dec, err := gate.Propose(ctx, prop)
	var rl *approval.RateLimitedError
	if errors.As(err, &rl) {
		h.rateLimited = rl
	} else if err == nil {
		h.rateLimited = nil
	}
	if err != nil {
		h.proposed = ""
		h.metrics.Fail(h.env, reasonGate)
		h.log.Error(err, "proposing plan; proposing it again at the next pass", "environment", h.env,
			"revision", approval.ShortRevision(prop.Revision), "planHash", prop.Plan.PlanHash)
		return dec
	}
	h.proposed, h.proposedAt = proposalKey(prop), h.now()
	return dec
}

// due reports whether prop is to be proposed (again): the gate has not
// accepted it, or it did a repropose period ago.
func (h *herald) due(prop approval.Proposal) bool {
	return h.proposed != proposalKey(prop) || h.now().Sub(h.proposedAt) >= h.repropose
}

// forget makes the pending plan proposed again at the next pass (a new
// term, a plan whose approval failed, one whose policy asks more now).
func (h *herald) forget() { h.proposed = "" }

// limited is the gate's rate limit in force now, if any.
func (h *herald) limited() *approval.RateLimitedError {
	if rl := h.rateLimited; rl != nil && h.now().Before(rl.Until) {
		return rl
	}
	return nil
}

func proposalKey(p approval.Proposal) string { return p.Revision + " " + p.Plan.PlanHash }

// started tells the gate, when it is an approval.Starter, that prop's apply
// is under way; a failure is logged and counted.
func (h *herald) started(ctx context.Context, prop approval.Proposal, approver string) {
	s, ok := h.gate.(approval.Starter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Started(ctx, prop, approver); err != nil {
		h.metrics.Fail(h.env, reasonGate)
		h.log.Error(err, "reporting the start of the apply to the gate", "environment", h.env, "planHash", prop.Plan.PlanHash)
	}
}

// completed reports how prop ended to the gate; a failure is logged and
// counted, and the outcome kept in the state to report again
// (internal/outbox).
func (h *herald) completed(ctx context.Context, prop approval.Proposal, out approval.Outcome) {
	if err := h.gate.Completed(ctx, prop, out); err != nil {
		h.metrics.Fail(h.env, reasonGate)
		h.log.Error(err, "reporting the outcome to the gate", "environment", h.env, "planHash", prop.Plan.PlanHash, "result", out.Result)
		h.owed.Owe(ctx, outbox.Completed(prop, out), err)
	}
}

// superseded reports that prop was superseded by revision by; a failure is
// logged and counted, and the report kept in the state to try again.
func (h *herald) superseded(ctx context.Context, prop approval.Proposal, by string) {
	if err := h.gate.Superseded(ctx, prop, by); err != nil {
		h.metrics.Fail(h.env, reasonGate)
		h.log.Error(err, "reporting the superseded plan", "environment", h.env, "planHash", prop.Plan.PlanHash)
		h.owed.Owe(ctx, outbox.Superseded(prop, by), err)
	}
}

// tally shows the gate the approvals of p so far, when it is an
// approval.Tallier; a failure is logged and counted.
func (h *herald) tally(ctx context.Context, prop approval.Proposal, p *approval.Pending) {
	t, ok := h.gate.(approval.Tallier)
	if !ok {
		return
	}
	if err := t.Tally(ctx, prop, p.Approvers(), p.Needed()); err != nil {
		h.metrics.Fail(h.env, reasonGate)
		h.log.Error(err, "showing the approvals so far on the gate", "environment", h.env, "planHash", p.PlanHash)
	}
}
