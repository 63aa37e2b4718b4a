package rollback

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// rollbackCall is one call of Rollback: the environment, the request, and
// the answer being made.
type rollbackCall struct {
	env string
	req api.RollbackRequest
	out *api.RollbackResponse
}

// incident pins the rolled-back versions in the reconciler for as long as
// the hold lasts, waits for the plan the pin makes, and approves it as the
// caller; a refused approval leaves it pending for an approver.
func (r *Rollbacker) incident(ctx context.Context, c rollbackCall, res *prbot.RollbackResult, hold lock.Lock) error {
	env, req, out := c.env, c.req, c.out
	p := NewPin(res, req, r.locks.Now(), hold.ExpiresAt) // the hold's clock: the API server's
	if err := r.rec.Pin(ctx, env, p); err != nil {
		return err
	}
	out.Pin = p
	out.Message += "; " + p.Message()
	wait, cancel := context.WithTimeout(ctx, r.planWait)
	defer cancel()
	for {
		v, err := r.rec.Environment(wait, env)
		if err == nil {
			switch {
			// The pending plan must be the pinned one, not one proposed from git's
			// versions by a pass that began before the pin was stored: approving
			// that would approve the very versions being rolled back from.
			case v.Pending != nil && !v.Pending.ProposedAt.Before(p.At) && PlansPin(v.Pending.Plan, p):
				r.approvePinned(ctx, c, v.Pending, p)
				return nil
			case v.LastResult != nil && !v.LastResult.Started.Before(p.At):
				out.PlanHash, out.Approval = v.LastResult.PlanHash, "applied"
				out.Message += fmt.Sprintf("; its plan %s was applied (%s)", v.LastResult.PlanHash, v.LastResult.Result)
				return nil
			}
		}
		select {
		case <-wait.Done():
			out.Approval = "pending"
			out.Message += fmt.Sprintf("; its plan was not proposed within %s: the reconciler plans it at its next pass, approve it then", r.planWait)
			return nil
		case <-time.After(r.poll):
		}
	}
}

// approvePinned approves the pending plan of pin p as the caller, unless it
// carries more than the pin; either way c.out says what became of it.
func (r *Rollbacker) approvePinned(ctx context.Context, c rollbackCall, pending *approval.Pending, p *approval.Pin) {
	env, req, out := c.env, c.req, c.out
	out.PlanHash = pending.PlanHash
	if foreign := ForeignChanges(pending.Plan, p); len(foreign) > 0 {
		// The pin's plan carries more than the pin (a service added since the
		// target, a container git changed): --now approves the rollback, not
		// what else waits.
		out.Approval = "pending"
		out.Message += fmt.Sprintf("; its plan %s was not approved: its changes differ from the rollback's, it also changes %s: it waits for an approver",
			pending.PlanHash, strings.Join(foreign, "; "))
		return
	}
	got, err := r.rec.Approve(ctx, env, pending.PlanHash, req.Caller)
	switch {
	case err != nil:
		out.Approval = "pending"
		out.Message += fmt.Sprintf("; its plan %s waits for an approver (approving it as %s was refused: %v)", pending.PlanHash, req.RequestedBy, err)
	case got != nil && !got.Complete():
		// The environment needs more approvers than the caller (approvals.required).
		out.Approval = "pending"
		out.Message += fmt.Sprintf("; its plan %s has %d of the %d approvals it needs (%s counted): it waits for more approvers",
			pending.PlanHash, len(got.Approvals), got.Needed(), req.RequestedBy)
	default:
		out.Approval = "approved"
		out.Message += fmt.Sprintf("; its plan %s was approved by %s and is being applied", pending.PlanHash, req.RequestedBy)
	}
}

// NewPin is the pin of an incident rollback: the rollback's target versions
// (Services) in place of the versions it rolls back from (Replaced), by the
// caller (its typed identity when known), from now until expires.
func NewPin(res *prbot.RollbackResult, req api.RollbackRequest, now, expires time.Time) *approval.Pin {
	by := req.RequestedBy
	if !req.Caller.ID.IsZero() {
		by = req.Caller.ID.String() // the typed identity: a skipConfirmation environment's history names it
	}
	p := &approval.Pin{PR: res.PR, URL: res.URL, Revision: res.Revision, By: by, At: now.UTC().Truncate(time.Second), ExpiresAt: expires}
	for _, c := range res.Changes {
		to := manifest.Service{Name: c.Service, Version: c.ToVersion}
		from := manifest.Service{Name: c.Service, Version: c.FromVersion}
		for _, ct := range c.Containers {
			to.Containers = append(to.Containers, manifest.Container{DockerName: ct.DockerName, DockerTag: ct.ToTag, DockerDigest: ct.ToDigest})
			from.Containers = append(from.Containers, manifest.Container{DockerName: ct.DockerName, DockerTag: ct.FromTag, DockerDigest: ct.FromDigest})
		}
		p.Services = append(p.Services, to)
		p.Replaced = append(p.Replaced, from)
	}
	return p
}

// PlansPin reports whether plan (a pending plan's JSON) moves no container
// of a pinned service to another tag than the pin's: the plan of the pin,
// not of the versions it replaces.
func PlansPin(plan json.RawMessage, p *approval.Pin) bool {
	var pl reconcile.Plan
	if err := json.Unmarshal(plan, &pl); err != nil {
		return false
	}
	for _, c := range pl.Changes {
		var tags []string
		for _, s := range p.Services {
			if s.Name == c.Service {
				for _, ct := range s.Containers {
					tags = append(tags, ct.DockerTag)
				}
			}
		}
		if tags != nil && !slices.Contains(tags, imageTag(c.To)) {
			return false
		}
	}
	return true
}

// ForeignChanges describes the changes of plan (a pending plan's JSON) that
// are not the pin's (approval.Pin.Foreign); an unreadable plan is one change
// that cannot be told.
func ForeignChanges(plan json.RawMessage, p *approval.Pin) []string {
	var pl reconcile.Plan
	if err := json.Unmarshal(plan, &pl); err != nil {
		return []string{fmt.Sprintf("whatever its unreadable plan holds (%v)", err)}
	}
	var out []string
	for _, c := range p.Foreign(pl.Changes) {
		out = append(out, approval.DescribeChange(c))
	}
	return out
}

// imageTag is the tag of an image reference ("repo:tag", "repo:tag@digest"; "" without one).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}
