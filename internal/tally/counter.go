package tally

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Counter counts the approvals of one environment's pending plans under its policy (approvals.required
// distinct approvers, approvals.forbidAuthors). Approvals are kept in the pending record of the Store, so
// every replica counts into the same record and a restart forgets none; a new planHash starts from none.
type Counter struct {
	Env    string
	Policy config.Approvals
	// Rules are environments.<env>.approvals.rules (none when empty), asked for every plan's requirement;
	// RuleApprover checks an approver against the teams and minPermission they name.
	Rules        *policy.Set
	RuleApprover RuleApprover
	Authors      approval.Authors
	// Locks lists the environment's locks in force, for rules that read them (nil: none can be listed).
	Locks func(ctx context.Context) ([]policy.Lock, error)
	// Range lists what the commits to deploy change, for rules that read revision.files or
	// revision.trailers (nil: nothing can list them): the git source.
	Range Ranger
	Now   func() time.Time
}

// Ranger lists what the commits after base up to head change (pkg/gitsource's Source.Range).
type Ranger interface {
	Range(ctx context.Context, base, head string) (gitsource.Range, error)
}

// RuleApprover says whether a person (a GitHub login) passes the teams and minPermission of the approval
// rules that apply to a plan of env (ok false: why not).
type RuleApprover func(ctx context.Context, env, login string, rule config.Approvers) (ok bool, why string, err error)

// Store is where pending plans and their approvals are kept: the environment's state.
type Store interface {
	Load(ctx context.Context, env string) (*state.EnvState, error)
	Update(ctx context.Context, env string, mutate func(*state.EnvState)) error
}

// Vote is an approval of the pending plan PlanHash by Who; Stale (may be nil) says that a pending
// record with that planHash is not the one approved (a release approval's plan, approved before its
// release began to wait).
type Vote struct {
	PlanHash string
	Who      identity.Principal
	Stale    func(*approval.Pending) bool
}

// requirement is what the approval rules ask of the pending plan p, given the environment's state st
// (its history). An error means the rules could not be judged: the approval is refused.
func (c *Counter) requirement(ctx context.Context, st *state.EnvState, p *approval.Pending) (policy.Requirement, error) {
	if c.Rules.Len() == 0 {
		return policy.Requirement{}, nil
	}
	var plan reconcile.Plan
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		return policy.Requirement{}, fmt.Errorf("reading the pending plan %s for its approval rules: %w", p.PlanHash, err)
	}
	in := policy.Input{Plan: policy.FromPlan(&plan), Revision: policy.Revision{SHA: p.Revision}, Now: c.Now(),
		History: policyHistory(st.History)}
	if c.Rules.ReadsAuthors() {
		if c.Authors == nil {
			return policy.Requirement{}, fmt.Errorf("the approval rules read revision.authors, and there is no way to list commit authors")
		}
		authors, err := c.Authors.Authors(ctx, fourEyesBase(st.History), p.Revision)
		if err != nil {
			return policy.Requirement{}, fmt.Errorf("listing the authors of the commits to deploy for the approval rules: %w", err)
		}
		in.Revision.Authors = authors
	}
	if c.Rules.ReadsRange() {
		if c.Range == nil {
			return policy.Requirement{}, fmt.Errorf("the approval rules read revision.files or revision.trailers, and there is no git source to list them")
		}
		r, err := c.Range.Range(ctx, fourEyesBase(st.History), p.Revision)
		if err != nil {
			return policy.Requirement{}, fmt.Errorf("listing the files and trailers of the commits to deploy for the approval rules: %w", err)
		}
		in.Revision.Files, in.Revision.Trailers = r.Files, r.Trailers
	}
	if c.Rules.ReadsLocks() {
		if c.Locks == nil {
			return policy.Requirement{}, fmt.Errorf("the approval rules read locks, and this environment has no lock service or lockPath")
		}
		locks, err := c.Locks(ctx)
		if err != nil {
			return policy.Requirement{}, fmt.Errorf("listing the locks for the approval rules: %w", err)
		}
		in.Locks = locks
	}
	req, _, err := c.Rules.Evaluate(ctx, in)
	return req, err
}

// Shows sets what the new pending plan p needs as its approval rules judge it (Required, Reasons), so
// every door shows "0 of 2 approvals (payments-api changes need …)" before anyone approves; Count judges
// again at each approval. Rules that cannot be judged are shown as the reason every approval is refused.
func (c *Counter) Shows(ctx context.Context, st *state.EnvState, p *approval.Pending) {
	req, err := c.requirement(ctx, st, p)
	if err != nil {
		p.Reasons = []string{err.Error() + ": every approval is refused until it is fixed"}
		return
	}
	p.Required, p.Reasons = c.Policy.With(req).Required, req.Messages()
}

// policyHistory is the history as rules see it (history), newest first, with the services each entry
// changed.
func policyHistory(entries []approval.Entry) []policy.Deploy {
	out := make([]policy.Deploy, 0, len(entries))
	for _, e := range entries {
		d := policy.Deploy{Revision: e.Revision, Result: e.Result, Finished: e.Finished, Services: []string{}}
		var changes []reconcile.Change
		if json.Unmarshal(e.Changes, &changes) == nil {
			seen := map[string]bool{}
			for _, ch := range changes {
				if !seen[ch.Service] {
					seen[ch.Service] = true
					d.Services = append(d.Services, ch.Service)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// ruleApproval refuses who when the rules that apply (req) name teams or a permission that who's person
// does not pass, or who acts for no person.
func (c *Counter) ruleApproval(ctx context.Context, who identity.Principal, req policy.Requirement) error {
	if !req.Restricts() {
		return nil
	}
	refuse := func(why string) error {
		return &approval.RefusedError{Environment: c.Env, Approver: who.String(), Reason: why}
	}
	rule := config.Approvers{Teams: req.Teams, MinPermission: req.MinPermission}
	person, ok := who.Person()
	if !ok || person.Kind != identity.GitHub {
		return refuse(fmt.Sprintf("%s acts for no GitHub login, and %s", who.ID, ruleNeeds(req)))
	}
	if c.RuleApprover == nil {
		return refuse(fmt.Sprintf("%s, and nothing here can ask GitHub (no GitHub client)", ruleNeeds(req)))
	}
	allowed, why, err := c.RuleApprover(ctx, c.Env, person.Name, rule)
	if err != nil {
		return fmt.Errorf("checking %s against the approval rules of environment %s: %w", person, c.Env, err)
	}
	if !allowed {
		return refuse(fmt.Sprintf("%s (%s)", ruleNeeds(req), why))
	}
	return nil
}

// ruleNeeds says who the rules that apply let approve, with their messages: "rule payments
// (payments-api changes need 2 approvers from acme/payments) needs membership of acme/payments".
func ruleNeeds(req policy.Requirement) string {
	var rules []string
	for _, a := range req.Applied {
		if a.Message != "" {
			rules = append(rules, fmt.Sprintf("%s (%s)", a.Rule, a.Message))
		} else {
			rules = append(rules, a.Rule)
		}
	}
	var who []string
	if len(req.Teams) > 0 {
		who = append(who, "membership of "+strings.Join(req.Teams, " or "))
	}
	if req.MinPermission != "" {
		who = append(who, req.MinPermission+" permission or higher")
	}
	return fmt.Sprintf("approval rule %s needs %s", strings.Join(rules, ", "), strings.Join(who, ", or "))
}

// Count checks that v.Who may approve the pending plan v.PlanHash (four-eyes) and adds them to its approvals
// (once: the same person approving again changes nothing). It returns the pending plan with its approvals
// and required count: Complete when it may be applied. A plan no longer pending gives a
// *approval.NotPendingError, an author under forbidAuthors an *approval.RefusedError, and authors that
// cannot be listed an error: nothing is counted then. store is the holder's (fenced) Store on the
// replica that leads the environment, the plain one on another.
func (c *Counter) Count(ctx context.Context, store Store, v Vote) (*approval.Pending, error) {
	planHash, who, stale := v.PlanHash, v.Who, v.Stale
	if stale == nil {
		stale = func(*approval.Pending) bool { return false }
	}
	st, err := store.Load(ctx, c.Env)
	if err != nil {
		return nil, err
	}
	p := st.Pending
	if p == nil || p.PlanHash != planHash || stale(p) {
		return nil, &approval.NotPendingError{Environment: c.Env, PlanHash: planHash, Pending: p}
	}
	req, err := c.requirement(ctx, st, p)
	if err != nil {
		// A rule that cannot be judged refuses: never waved through.
		return nil, &approval.RefusedError{Environment: c.Env, Approver: who.String(), Reason: err.Error()}
	}
	pol := c.Policy.With(req)
	if who.Automation() && !pol.AutomationAllowed() {
		return nil, &approval.RefusedError{Environment: c.Env, Approver: who.String(), Reason: automationRefused(pol, who)}
	}
	if err := c.ruleApproval(ctx, who, req); err != nil {
		return nil, err
	}
	if pol.ForbidAuthors {
		if err := c.fourEyes(ctx, fourEyesBase(st.History), p.Revision, who); err != nil {
			return nil, err
		}
	}
	var out *approval.Pending
	err = store.Update(ctx, c.Env, func(st *state.EnvState) {
		out = nil
		p := st.Pending
		if p == nil || p.PlanHash != planHash || stale(p) {
			return
		}
		// The policy of now: a restart with another approvals.required, or other rules, counts by it.
		p.Required, p.Reasons = pol.Required, req.Messages()
		if !p.ApprovedBy(who) {
			p.Approvals = append(p.Approvals, approval.NewApproval(who, c.Now().UTC()))
		}
		cp := *p
		cp.Approvals = append([]approval.Approval(nil), p.Approvals...)
		out = &cp
	})
	if err != nil {
		return nil, fmt.Errorf("counting the approval of %s: %w", who.String(), err)
	}
	if out == nil {
		st, err := store.Load(ctx, c.Env)
		if err != nil {
			return nil, err
		}
		return nil, &approval.NotPendingError{Environment: c.Env, PlanHash: planHash, Pending: st.Pending}
	}
	return out, nil
}

// fourEyes refuses who when they wrote or committed any commit after base up to head (head alone when
// base is ""). who is matched as the person it is for every rule (a token acting for github:alice as
// alice), automation by its own name.
func (c *Counter) fourEyes(ctx context.Context, base, head string, who identity.Principal) error {
	if c.Authors == nil {
		return fmt.Errorf("checking the authors of %s for environment %s: no way to list commit authors", gitsource.ShortRevision(head), c.Env)
	}
	authors, err := c.Authors.Authors(ctx, base, head)
	if ua := (*approval.UntiedAuthorError)(nil); errors.As(err, &ua) {
		why := fmt.Sprintf("four-eyes: %s, so nobody can be told apart from its %s: no approval counts while it is among "+
			"the commits to deploy (a verified e-mail address of its %s's GitHub account ties it)", ua.Error(), ua.Role, ua.Role)
		return &approval.RefusedError{Environment: c.Env, Approver: who.String(), Reason: why}
	}
	if err != nil {
		return fmt.Errorf("listing the authors of the commits to deploy (four-eyes) in environment %s: %w", c.Env, err)
	}
	if a, ok := authorMatch(authorName(who), authors); ok {
		span := "commit " + gitsource.ShortRevision(head)
		if base != "" {
			span = fmt.Sprintf("the commits after %s up to %s", gitsource.ShortRevision(base), gitsource.ShortRevision(head))
		}
		why := fmt.Sprintf("four-eyes: %s wrote or committed %s (as %s); another approver must approve", who.String(), span, a)
		return &approval.RefusedError{Environment: c.Env, Approver: who.String(), Reason: why}
	}
	return nil
}

// Note is what the gate shows beside a plan the approval rules apply to (none when no rule applies):
// "**Approval rules:** 0 of 2 approvals (payments-api changes need 2 approvers from acme/payments)."
func Note(p *approval.Pending) []string {
	if len(p.Reasons) == 0 {
		return nil
	}
	return []string{"**Approval rules:** " + p.Tally() + "."}
}
