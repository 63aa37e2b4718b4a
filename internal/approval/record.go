package approval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// Pending is a plan waiting for approval.
type Pending struct {
	Revision   string          `json:"revision"`
	PlanHash   string          `json:"planHash"`
	Plan       json.RawMessage `json:"plan"`
	ProposedAt time.Time       `json:"proposedAt"`
	// Required is how many distinct approvers the plan needs (the environment's approvals.required; 0
	// reads as 1).
	Required int `json:"required,omitempty"`
	// Approvals are the approvals counted so far, oldest first, one per approver. They belong to this
	// planHash: a new plan starts from none.
	Approvals []Approval `json:"approvals,omitempty"`
	// Release marks a release approval: the plan was applied and verified,
	// and the approval task after its deployment (pipeline.yaml's sequence)
	// waits for a person. Approving releases it (the rest of the sequence
	// runs); rejecting fails the deploy. Its planHash is the applied plan's.
	Release bool `json:"release,omitempty"`
	// Reasons are the messages of the approval rules (environments.<env>.approvals.rules) that apply to
	// the plan: why it needs Required approvers, or whom. Shown with the tally at every door.
	Reasons []string `json:"reasons,omitempty"`
}

// Approval is one approver's approval of a pending plan.
type Approval struct {
	// Approver is who approved, as kind:name (github:alice, token:ci-deployer); a bare name in a record
	// written before identities were typed.
	Approver string `json:"approver"`
	// For is the person the approver acts for (a named token's or a ServiceAccount's actsFor), as
	// kind:name; empty when it acts for nobody or is that person.
	For string    `json:"for,omitempty"`
	At  time.Time `json:"at"`
}

// NewApproval is p's approval at t, as the record writes it.
func NewApproval(p identity.Principal, at time.Time) Approval {
	a := Approval{Approver: p.ID.String(), At: at}
	if !p.ActsFor.IsZero() && !p.ActsFor.Equal(p.ID) {
		a.For = p.ActsFor.String()
	}
	return a
}

// Principal reads a back as the principal that approved (a legacy ID for a bare name).
func (a Approval) Principal() identity.Principal {
	p := identity.Principal{ID: identity.Parse(a.Approver)}
	if a.For != "" {
		p.ActsFor = identity.Parse(a.For)
	}
	return p
}

// counted is the key under which p counts once among a plan's approvers: the person it is for every
// rule (alice through GitHub and through her actsFor token is one approver), else its own identity.
func counted(p identity.Principal) string {
	if person, ok := p.Person(); ok {
		return person.Key()
	}
	return p.ID.Key()
}

// Needed is how many approvals p needs in all (at least 1).
func (p *Pending) Needed() int { return max(p.Required, 1) }

// Complete reports whether p has all the approvals it needs.
func (p *Pending) Complete() bool { return len(p.Approvals) >= p.Needed() }

// Approvers lists who approved p so far, oldest first.
func (p *Pending) Approvers() []string {
	out := make([]string, len(p.Approvals))
	for i, a := range p.Approvals {
		out[i] = a.Approver
	}
	return out
}

// ApprovedBy reports whether who approved p already: the same identity (GitHub logins compare without
// case), or the same person through another credential (a token acting for github:alice counts as
// alice). An approval recorded before identities were typed holds a bare name whose kind is unknown: it
// is taken as already given by anyone of that name (without case), so that an upgrade in the middle of
// a plan's approvals never counts one person twice.
func (p *Pending) ApprovedBy(who identity.Principal) bool {
	k := counted(who)
	person, _ := who.Person()
	for _, a := range p.Approvals {
		ap := a.Principal()
		if ap.ID.Legacy() && a.For == "" {
			if strings.EqualFold(ap.ID.Name, who.ID.Name) || (!person.IsZero() && strings.EqualFold(ap.ID.Name, person.Name)) {
				return true
			}
			continue
		}
		if counted(ap) == k {
			return true
		}
	}
	return false
}

// Tally says how far p's approval is, and why when approval rules apply: "1 of 2 approvals: alice
// (payments-api changes need 2 approvers from acme/payments)".
func (p *Pending) Tally() string {
	s := Tally(p.Approvers(), p.Needed())
	if len(p.Reasons) > 0 {
		s += " (" + strings.Join(p.Reasons, "; ") + ")"
	}
	return s
}

// Tally says how many of required approvals approvers are: "1 of 2 approvals: alice", "0 of 2 approvals".
func Tally(approvers []string, required int) string {
	s := fmt.Sprintf("%d of %d approvals", len(approvers), required)
	if len(approvers) > 0 {
		s += ": " + strings.Join(approvers, ", ")
	}
	return s
}

// JoinApprovers is how several approvers are written where one name is expected (the approver field of
// InFlight, Entry and Outcome, kept for compatibility): "alice, bob".
func JoinApprovers(approvers []string) string { return strings.Join(approvers, ", ") }

// InFlight is an approved plan whose apply has started and not yet been
// recorded in the history. After a restart the worker continues it without
// asking again, provided the re-planned changes are part of what was approved.
type InFlight struct {
	Revision string `json:"revision"`
	PlanHash string `json:"planHash"`
	Approver string `json:"approver"`
	// Approvers are all who approved, when the plan needed more than one (Approver joins them).
	Approvers []string        `json:"approvers,omitempty"`
	Changes   json.RawMessage `json:"changes"`
	Started   time.Time       `json:"started"`
}

// Results of an Outcome and of a history Entry.
const (
	ResultSucceeded   = "succeeded"
	ResultFailed      = "failed"
	ResultInterrupted = "interrupted"
	ResultRejected    = "rejected"
	// ResultRolledBack is a failed rollout whose workloads were put back
	// on the images they ran before (environments.<env>.onFailedRollout:
	// rollback); Message says why it failed and how the rollback went.
	ResultRolledBack = "rolled-back"
)

// Entry is one applied (or rejected) plan in an environment's history.
type Entry struct {
	// ID numbers the entries of one environment 1, 2, 3, ... in the order
	// they were recorded; it is never reused (0: recorded before entries
	// were numbered).
	ID       int64           `json:"id,omitempty"`
	Revision string          `json:"revision"`
	PlanHash string          `json:"planHash"`
	Changes  json.RawMessage `json:"changes"`
	// Approver is who approved (or rejected), several joined by ", " (JoinApprovers).
	Approver string `json:"approver"`
	// Approvers lists every approver of an applied plan, in the order they approved.
	Approvers []string `json:"approvers,omitempty"`
	// Result is one of succeeded, failed, interrupted, rejected or rolled-back.
	Result string `json:"result"`
	// Message says why a plan failed or was rejected.
	Message string `json:"message,omitempty"`
	// Workloads holds the per-workload results as pkg/reconcile reports them.
	Workloads json.RawMessage `json:"workloads,omitempty"`
	// HistoryRewritten is the last applied revision that Revision did not
	// descend from, when the plan was flagged "history rewritten".
	HistoryRewritten string    `json:"historyRewritten,omitempty"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished"`
	// Manifest is the environment's resolved manifest at Revision: what
	// the entry asked to run (nil for entries recorded before it was kept,
	// or when the revision could not be resolved again).
	Manifest *Manifest `json:"manifest,omitempty"`
	// Verification holds the results of the verification tasks (pipeline.yaml
	// test and evaluation tasks run by pkg/verify) run after the deployment,
	// in order; a failed one ends the list.
	Verification []verify.TaskResult `json:"verification,omitempty"`
	// ReleasedBy is who approved the release of the deployed revision (the
	// sequence's approval task after deployment), several joined by ", ".
	ReleasedBy string `json:"releasedBy,omitempty"`
	// PinnedTo is the revision an incident rollback (`rollback --now`) had
	// pinned the environment's versions to when this entry was recorded
	// (Pin.Revision): what it deployed is not what git said at Revision.
	PinnedTo string `json:"pinnedTo,omitempty"`
	// BreakGlass is the break-glass that let this plan through closed deploy windows, joined from the
	// state's break-glass record when the history is read (never written into the history itself, so
	// that a build that does not know it loses nothing).
	BreakGlass *BreakGlass `json:"breakGlass,omitempty"`
}
