package daemon

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
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// counter counts the approvals of one environment's pending plans under its policy (approvals.required
// distinct approvers, approvals.forbidAuthors). Approvals are kept in the pending record of the Store, so
// every replica counts into the same record and a restart forgets none; a new planHash starts from none.
type counter struct {
	env    string
	policy config.Approvals
	// rules are environments.<env>.approvals.rules (none when empty), asked for every plan's requirement;
	// ruleApprover checks an approver against the teams and minPermission they name.
	rules        *policy.Set
	ruleApprover RuleApprover
	authors      approval.Authors
	// locks lists the environment's locks in force, for rules that read them (nil: none can be listed).
	locks func(ctx context.Context) ([]policy.Lock, error)
	now   func() time.Time
}

// requirement is what the approval rules ask of the pending plan p, given the environment's state st
// (its history). An error means the rules could not be judged: the approval is refused.
func (c *counter) requirement(ctx context.Context, st *state.EnvState, p *approval.Pending) (policy.Requirement, error) {
	if c.rules.Len() == 0 {
		return policy.Requirement{}, nil
	}
	var plan reconcile.Plan
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		return policy.Requirement{}, fmt.Errorf("reading the pending plan %s for its approval rules: %w", p.PlanHash, err)
	}
	in := policy.Input{Plan: policy.FromPlan(&plan), Revision: policy.Revision{SHA: p.Revision}, Now: c.now(),
		History: policyHistory(st.History)}
	if c.rules.ReadsAuthors() {
		if c.authors == nil {
			return policy.Requirement{}, fmt.Errorf("the approval rules read revision.authors, and there is no way to list commit authors")
		}
		authors, err := c.authors.Authors(ctx, fourEyesBase(st.History), p.Revision)
		if err != nil {
			return policy.Requirement{}, fmt.Errorf("listing the authors of the commits to deploy for the approval rules: %w", err)
		}
		in.Revision.Authors = authors
	}
	if c.rules.ReadsLocks() {
		if c.locks == nil {
			return policy.Requirement{}, fmt.Errorf("the approval rules read locks, and this environment has no lock service or lockPath")
		}
		locks, err := c.locks(ctx)
		if err != nil {
			return policy.Requirement{}, fmt.Errorf("listing the locks for the approval rules: %w", err)
		}
		in.Locks = locks
	}
	req, _, err := c.rules.Evaluate(ctx, in)
	return req, err
}

// shows sets what the new pending plan p needs as its approval rules judge it (Required, Reasons), so
// every door shows "0 of 2 approvals (payments-api changes need …)" before anyone approves; count judges
// again at each approval. Rules that cannot be judged are shown as the reason every approval is refused.
func (c *counter) shows(ctx context.Context, st *state.EnvState, p *approval.Pending) {
	req, err := c.requirement(ctx, st, p)
	if err != nil {
		p.Reasons = []string{err.Error() + ": every approval is refused until it is fixed"}
		return
	}
	p.Required, p.Reasons = c.policy.With(req).Required, req.Messages()
}

// policyLocks lists the locks in force at and beneath lockPath, as approval rules see them; nil without a
// lock service or lockPath.
func (d *Daemon) policyLocks(lockPath string) func(ctx context.Context) ([]policy.Lock, error) {
	if d.lockSvc == nil || lockPath == "" {
		return nil
	}
	return func(ctx context.Context) ([]policy.Lock, error) {
		ls, err := d.lockSvc.List(ctx, lockPath)
		if err != nil {
			return nil, err
		}
		now := d.lockSvc.Now()
		out := []policy.Lock{}
		for _, l := range ls {
			if l.Expired(now) {
				continue
			}
			svc := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(l.Path), strings.ToLower(lockPath)), "/")
			out = append(out, policy.Lock{Service: svc, Author: l.Author, Type: string(l.Type)})
		}
		return out, nil
	}
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
func (c *counter) ruleApproval(ctx context.Context, who identity.Principal, req policy.Requirement) error {
	if !req.Restricts() {
		return nil
	}
	refuse := func(why string) error {
		return &approval.RefusedError{Environment: c.env, Approver: who.String(), Reason: why}
	}
	rule := config.Approvers{Teams: req.Teams, MinPermission: req.MinPermission}
	person, ok := who.Person()
	if !ok || person.Kind != identity.GitHub {
		return refuse(fmt.Sprintf("%s acts for no GitHub login, and %s", who.ID, ruleNeeds(req)))
	}
	if c.ruleApprover == nil {
		return refuse(fmt.Sprintf("%s, and nothing here can ask GitHub (no GitHub client)", ruleNeeds(req)))
	}
	allowed, why, err := c.ruleApprover(ctx, c.env, person.Name, rule)
	if err != nil {
		return fmt.Errorf("checking %s against the approval rules of environment %s: %w", person, c.env, err)
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

// count checks that dc's approver may approve the pending plan dc.planHash (four-eyes) and adds them to its approvals
// (once: the same person approving again changes nothing). It returns the pending plan with its approvals
// and required count: Complete when it may be applied. A plan no longer pending gives a
// *approval.NotPendingError, an author under forbidAuthors an *approval.RefusedError, and authors that
// cannot be listed an error: nothing is counted then. store is the holder's (fenced) Store on the
// replica that leads the environment, the plain one on another.
func (c *counter) count(ctx context.Context, store *state.Store, dc decision, stale func(*approval.Pending) bool) (*approval.Pending, error) {
	planHash, who := dc.planHash, dc.who
	if stale == nil {
		stale = func(*approval.Pending) bool { return false }
	}
	st, err := store.Load(ctx, c.env)
	if err != nil {
		return nil, err
	}
	p := st.Pending
	if p == nil || p.PlanHash != planHash || stale(p) {
		return nil, &approval.NotPendingError{Environment: c.env, PlanHash: planHash, Pending: p}
	}
	req, err := c.requirement(ctx, st, p)
	if err != nil {
		// A rule that cannot be judged refuses: never waved through.
		return nil, &approval.RefusedError{Environment: c.env, Approver: who.String(), Reason: err.Error()}
	}
	pol := c.policy.With(req)
	if who.Automation() && !pol.AutomationAllowed() {
		return nil, &approval.RefusedError{Environment: c.env, Approver: who.String(), Reason: automationRefused(pol, who)}
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
	err = store.Update(ctx, c.env, func(st *state.EnvState) {
		out = nil
		p := st.Pending
		if p == nil || p.PlanHash != planHash || stale(p) {
			return
		}
		// The policy of now: a restart with another approvals.required, or other rules, counts by it.
		p.Required, p.Reasons = pol.Required, req.Messages()
		if !p.ApprovedBy(who) {
			p.Approvals = append(p.Approvals, approval.NewApproval(who, c.now().UTC()))
		}
		cp := *p
		cp.Approvals = append([]approval.Approval(nil), p.Approvals...)
		out = &cp
	})
	if err != nil {
		return nil, fmt.Errorf("counting the approval of %s: %w", who.String(), err)
	}
	if out == nil {
		st, err := store.Load(ctx, c.env)
		if err != nil {
			return nil, err
		}
		return nil, &approval.NotPendingError{Environment: c.env, PlanHash: planHash, Pending: st.Pending}
	}
	return out, nil
}

// fourEyes refuses who when they wrote or committed any commit after base up to head (head alone when
// base is ""). who is matched as the person it is for every rule (a token acting for github:alice as
// alice), automation by its own name.
func (c *counter) fourEyes(ctx context.Context, base, head string, who identity.Principal) error {
	if c.authors == nil {
		return fmt.Errorf("checking the authors of %s for environment %s: no way to list commit authors", short(head), c.env)
	}
	authors, err := c.authors.Authors(ctx, base, head)
	if ua := (*approval.UntiedAuthorError)(nil); errors.As(err, &ua) {
		why := fmt.Sprintf("four-eyes: %s, so nobody can be told apart from its %s: no approval counts while it is among "+
			"the commits to deploy (a verified e-mail address of its %s's GitHub account ties it)", ua.Error(), ua.Role, ua.Role)
		return &approval.RefusedError{Environment: c.env, Approver: who.String(), Reason: why}
	}
	if err != nil {
		return fmt.Errorf("listing the authors of the commits to deploy (four-eyes) in environment %s: %w", c.env, err)
	}
	if a, ok := authorMatch(authorName(who), authors); ok {
		span := "commit " + short(head)
		if base != "" {
			span = fmt.Sprintf("the commits after %s up to %s", short(base), short(head))
		}
		why := fmt.Sprintf("four-eyes: %s wrote or committed %s (as %s); another approver must approve", who.String(), span, a)
		return &approval.RefusedError{Environment: c.env, Approver: who.String(), Reason: why}
	}
	return nil
}

// rulesNote is what the gate shows beside a plan the approval rules apply to (none when no rule applies):
// "**Approval rules:** 0 of 2 approvals (payments-api changes need 2 approvers from acme/payments)."
func rulesNote(p *approval.Pending) []string {
	if len(p.Reasons) == 0 {
		return nil
	}
	return []string{"**Approval rules:** " + p.Tally() + "."}
}
