package herald

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/outbox"
)

// Config is what a Herald tells the gate with.
type Config struct {
	// Env is the environment whose gate it is.
	Env string
	// Gate is the environment's gate.
	Gate approval.Gate
	// Owed keeps the outcomes the gate refused, to report them again.
	Owed *outbox.Queue
	// Metrics counts the gate's failures (stage gate).
	Metrics *meter.Metrics
	Log     logr.Logger
	Now     func() time.Time
	// Repropose is how often a plan still pending is proposed again.
	Repropose time.Duration
}

// Herald is what an environment's gate is told, and what it was told last:
// plans proposed (and when, so that a plan still pending is proposed again
// after the repropose period, or at once when the gate refused it), applies
// started, outcomes, tallies and plans superseded. A report the gate refuses
// is logged, counted and, for an outcome or a supersession, kept in the
// state to be reported again (internal/outbox). The daemon's worker tells
// the gate through it only.
type Herald struct {
	c Config

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

// New makes the herald of c.
func New(c Config) *Herald { return &Herald{c: c} }

// Propose asks gate (the environment's, or the one deciding for
// skipConfirmation) about prop and remembers a plan it accepted, so that a
// plan whose Propose failed is proposed again at the next pass. A failure is
// logged and counted and leaves the plan pending.
func (h *Herald) Propose(ctx context.Context, gate approval.Gate, prop approval.Proposal) approval.Decision {
	dec, err := gate.Propose(ctx, prop)
	var rl *approval.RateLimitedError
	if errors.As(err, &rl) {
		h.rateLimited = rl
	} else if err == nil {
		h.rateLimited = nil
	}
	if err != nil {
		h.proposed = ""
		h.c.Metrics.Fail(h.c.Env, meter.ReasonGate)
		h.c.Log.Error(err, "proposing plan; proposing it again at the next pass", "environment", h.c.Env,
			"revision", approval.ShortRevision(prop.Revision), "planHash", prop.Plan.PlanHash)
		return dec
	}
	h.proposed, h.proposedAt = proposalKey(prop), h.c.Now()
	return dec
}

// Due reports whether prop is to be proposed (again): the gate has not
// accepted it, or it did a repropose period ago.
func (h *Herald) Due(prop approval.Proposal) bool {
	return h.proposed != proposalKey(prop) || h.c.Now().Sub(h.proposedAt) >= h.c.Repropose
}

// Forget makes the pending plan proposed again at the next pass (a new
// term, a plan whose approval failed, one whose policy asks more now).
func (h *Herald) Forget() { h.proposed = "" }

// Limited is the gate's rate limit in force now, if any.
func (h *Herald) Limited() *approval.RateLimitedError {
	if rl := h.rateLimited; rl != nil && h.c.Now().Before(rl.Until) {
		return rl
	}
	return nil
}

func proposalKey(p approval.Proposal) string { return p.Revision + " " + p.Plan.PlanHash }

// Started tells the gate, when it is an approval.Starter, that prop's apply
// is under way; a failure is logged and counted.
func (h *Herald) Started(ctx context.Context, prop approval.Proposal, approver string) {
	s, ok := h.c.Gate.(approval.Starter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Started(ctx, prop, approver); err != nil {
		h.c.Metrics.Fail(h.c.Env, meter.ReasonGate)
		h.c.Log.Error(err, "reporting the start of the apply to the gate", "environment", h.c.Env, "planHash", prop.Plan.PlanHash)
	}
}

// Completed reports how prop ended to the gate; a failure is logged and
// counted, and the outcome kept in the state to report again
// (internal/outbox).
func (h *Herald) Completed(ctx context.Context, prop approval.Proposal, out approval.Outcome) {
	if err := h.c.Gate.Completed(ctx, prop, out); err != nil {
		h.c.Metrics.Fail(h.c.Env, meter.ReasonGate)
		h.c.Log.Error(err, "reporting the outcome to the gate", "environment", h.c.Env, "planHash", prop.Plan.PlanHash, "result", out.Result)
		h.c.Owed.Owe(ctx, outbox.Completed(prop, out), err)
	}
}

// Superseded reports that prop was superseded by revision by; a failure is
// logged and counted, and the report kept in the state to try again.
func (h *Herald) Superseded(ctx context.Context, prop approval.Proposal, by string) {
	if err := h.c.Gate.Superseded(ctx, prop, by); err != nil {
		h.c.Metrics.Fail(h.c.Env, meter.ReasonGate)
		h.c.Log.Error(err, "reporting the superseded plan", "environment", h.c.Env, "planHash", prop.Plan.PlanHash)
		h.c.Owed.Owe(ctx, outbox.Superseded(prop, by), err)
	}
}

// Tally shows the gate the approvals of p so far, when it is an
// approval.Tallier; a failure is logged and counted.
func (h *Herald) Tally(ctx context.Context, prop approval.Proposal, p *approval.Pending) {
	t, ok := h.c.Gate.(approval.Tallier)
	if !ok {
		return
	}
	if err := t.Tally(ctx, prop, p.Approvers(), p.Needed()); err != nil {
		h.c.Metrics.Fail(h.c.Env, meter.ReasonGate)
		h.c.Log.Error(err, "showing the approvals so far on the gate", "environment", h.c.Env, "planHash", p.PlanHash)
	}
}
