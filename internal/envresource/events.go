package envresource

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The reasons of the Events on an Environment (Rejected and RolledBack are
// ReasonRejected and ReasonRolledBack, the Deployed condition's).
const (
	ReasonPlanProposed       = "PlanProposed"
	ReasonReleaseProposed    = "ReleaseProposed"
	ReasonSuperseded         = "Superseded"
	ReasonApproved           = "Approved"
	ReasonApplyStarted       = "ApplyStarted"
	ReasonApplied            = "Applied"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonVerified           = "Verified"
	ReasonVerificationFailed = "VerificationFailed"
	ReasonReleased           = "Released"
	ReasonLocked             = "Locked"
	ReasonUnlocked           = "Unlocked"
	ReasonDeferred           = "Deferred"
	ReasonBreakGlass         = "BreakGlass"
)

// EventSource is the component the Events name as their source.
const EventSource = "stagehand-reconciler"

// maxQueued bounds the Events that wait for an environment's next write.
const maxQueued = 64

// Events tells each environment's story as Kubernetes Events on its
// Environment object, so that `kubectl describe environment prod` reads as
// a history: a plan proposed, approved, rejected or superseded, an apply
// started and how it ended, each verification's result, a release, a
// rollback, a lock placed or lifted.
//
// It hears the daemon as an approval.Gate that decides nothing (with
// approval.Starter) and as a sequence.Listener, from the worker of the
// replica that works the environment; what it hears waits, in order, for
// that worker's next call of the record hook (Writer.Hook), which emits it
// on the object the Writer knows, after the Writer's write and its check
// that the term still holds. The Locked and Unlocked Events, and the
// approvals of a plan that needs more than one, come from what the write
// changed. A pass that changes nothing emits nothing: a plan proposed again
// (each new process, a gate that failed) that the object shows pending
// already is not told again. Identical Events aggregate (the recorder
// counts them).
type Events struct {
	rec record.EventRecorder

	mu     sync.Mutex
	queued map[string][]story
	// deployed is, per environment, the revision whose deployment task
	// finished last: an approval task that finishes after it releases it.
	deployed map[string]string
	// deferred is, per environment, the plan told deferred last (told once).
	deferred map[string]string
}

// story is an Event waiting for its object.
type story struct {
	typ, reason, msg string
	// proposed is the plan a PlanProposed names: not told when the
	// object showed it pending before this write.
	proposed string
}

var (
	_ approval.Gate         = (*Events)(nil)
	_ approval.Starter      = (*Events)(nil)
	_ sequence.Listener     = (*Events)(nil)
	_ approval.Deferrer     = (*Events)(nil)
	_ approval.GlassBreaker = (*Events)(nil)
)

// NewEvents returns the Events emitted through rec (client-go's
// record.EventRecorder: core/v1 Events, see docs/environments.md).
func NewEvents(rec record.EventRecorder) *Events {
	return &Events{rec: rec, queued: map[string][]story{}, deployed: map[string]string{}, deferred: map[string]string{}}
}

func (e *Events) add(env string, s story) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := append(e.queued[env], s)
	if len(q) > maxQueued {
		q = q[len(q)-maxQueued:]
	}
	e.queued[env] = q
}

// Propose tells of a plan (or a release) that awaits approval; it decides
// nothing.
func (e *Events) Propose(_ context.Context, p approval.Proposal) (approval.Decision, error) {
	if !p.Release.IsZero() {
		e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonReleaseProposed, proposed: planHash(p) + " release",
			msg: fmt.Sprintf("revision %s deployed and verified awaits its release approval (plan %s)", gitsource.ShortRevision(p.Revision), shortHash(planHash(p)))})
		return approval.Decision{}, nil
	}
	e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonPlanProposed, proposed: planHash(p),
		msg: fmt.Sprintf("plan %s of revision %s awaits approval: %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision), changes(p.Plan))})
	return approval.Decision{}, nil
}

// Deferred tells of an approved (or auto-approved) plan that waits for the deploy windows, once per plan;
// why says until when.
func (e *Events) Deferred(_ context.Context, p approval.Proposal, why string) error {
	k := p.Revision + " " + planHash(p)
	e.mu.Lock()
	seen := e.deferred[p.Environment] == k
	e.deferred[p.Environment] = k
	e.mu.Unlock()
	if !seen {
		e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonDeferred,
			msg: fmt.Sprintf("plan %s of revision %s deferred: %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision), why)})
	}
	return nil
}

// BrokeGlass tells of a plan let through the closed deploy windows: who, and why.
func (e *Events) BrokeGlass(_ context.Context, p approval.Proposal, b approval.BreakGlass) error {
	e.add(p.Environment, story{typ: corev1.EventTypeWarning, reason: ReasonBreakGlass,
		msg: fmt.Sprintf("plan %s of revision %s goes out through the closed deploy windows: %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision), b.Message())})
	return nil
}

// Superseded tells of a pending plan withdrawn.
func (e *Events) Superseded(_ context.Context, p approval.Proposal, by string) error {
	msg := fmt.Sprintf("plan %s of revision %s withdrawn: nothing is left to apply", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision))
	if by != "" {
		msg = fmt.Sprintf("plan %s of revision %s superseded by revision %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision), gitsource.ShortRevision(by))
	}
	e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonSuperseded, msg: msg})
	return nil
}

// Started tells of the approval that let an apply begin (not an automatic
// one) and of the apply.
func (e *Events) Started(_ context.Context, p approval.Proposal, approver string) error {
	what := fmt.Sprintf("plan %s of revision %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision))
	if approver != "" && !approval.IsAuto(approver) {
		e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonApproved, msg: what + " approved by " + approver})
	}
	e.add(p.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonApplyStarted,
		msg: fmt.Sprintf("applying %s (approved by %s): %s", what, approver, changes(p.Plan))})
	return nil
}

// Completed tells how an approved or rejected plan ended.
func (e *Events) Completed(_ context.Context, p approval.Proposal, o approval.Outcome) error {
	what := fmt.Sprintf("plan %s of revision %s", shortHash(planHash(p)), gitsource.ShortRevision(p.Revision))
	s := story{typ: corev1.EventTypeWarning}
	switch o.Result {
	case approval.ResultSucceeded:
		s.typ, s.reason = corev1.EventTypeNormal, ReasonApplied
		s.msg = fmt.Sprintf("revision %s deployed (%s, approved by %s): %s", gitsource.ShortRevision(p.Revision), "plan "+shortHash(planHash(p)), o.Approver, changes(p.Plan))
		if o.Sequence != "" {
			s.msg += "; sequence " + o.Sequence
		}
	case approval.ResultRejected:
		s.reason, s.msg = ReasonRejected, what+" rejected by "+o.Approver
		if o.Message != "" {
			s.msg += ": " + o.Message
		}
	case approval.ResultRolledBack:
		s.reason, s.msg = ReasonRolledBack, what+" rolled back: "+o.Message
	default: // failed, interrupted
		s.reason, s.msg = ReasonApplyFailed, fmt.Sprintf("%s %s: %s", what, o.Result, o.Message)
	}
	e.add(p.Environment, s)
	return nil
}

// SequenceEvent tells each verification's result and a release.
func (e *Events) SequenceEvent(_ context.Context, ev sequence.Event) {
	if ev.Kind != sequence.KindFinished || ev.Task == "" {
		return
	}
	d := ev.Data
	switch ev.Task {
	case promote.TaskDeployment:
		e.mu.Lock()
		e.deployed[ev.Environment] = d.Revision
		e.mu.Unlock()
	case promote.TaskApproval:
		e.mu.Lock()
		released := e.deployed[ev.Environment] == d.Revision
		e.mu.Unlock()
		if released && d.Result != promote.ResultFail {
			e.add(ev.Environment, story{typ: corev1.EventTypeNormal, reason: ReasonReleased,
				msg: fmt.Sprintf("revision %s released by %s", gitsource.ShortRevision(d.Revision), d.Approver)})
		}
	case promote.TaskRelease:
	default: // test, evaluation
		s := story{typ: corev1.EventTypeNormal, reason: ReasonVerified}
		if d.Result == promote.ResultFail {
			s.typ, s.reason = corev1.EventTypeWarning, ReasonVerificationFailed
		}
		s.msg = fmt.Sprintf("%s of revision %s: %s", ev.Task, gitsource.ShortRevision(d.Revision), d.Result)
		if d.Message != "" {
			s.msg += ": " + d.Message
		}
		e.add(ev.Environment, s)
	}
}

// emit emits env's Events on ref: those that came from what a write
// changed (prev to next, nil: no write), then those waiting.
func (e *Events) emit(env string, ref *corev1.ObjectReference, prev, next *Status) {
	e.mu.Lock()
	q := e.queued[env]
	delete(e.queued, env)
	e.mu.Unlock()
	for _, s := range changed(prev, next) {
		e.rec.Event(ref, s.typ, s.reason, clip(s.msg, maxMessage))
	}
	for _, s := range q {
		if s.proposed != "" && prev != nil && prev.Pending != nil && pendingKey(prev.Pending) == s.proposed {
			continue // the object showed it pending already: proposed again, not anew
		}
		e.rec.Event(ref, s.typ, s.reason, clip(s.msg, maxMessage))
	}
}

// changed are the Events of what moved from prev to next: a lock placed or
// lifted, an approval counted that left the plan pending.
func changed(prev, next *Status) []story {
	if prev == nil || next == nil {
		return nil
	}
	var out []story
	// Locks placed and lifted, by people (the reconciler's own apply lock
	// comes and goes with every apply: the ApplyStarted and Applied Events
	// tell of it), and an incident rollback's hold.
	was, is := keyedLocks(prev.Locks), keyedLocks(next.Locks)
	for _, l := range next.Locks {
		if k := lockKey(l); is[k] && !was[k] {
			out = append(out, story{typ: corev1.EventTypeNormal, reason: ReasonLocked, msg: fmt.Sprintf("%s lock at %s placed by %s", l.Type, l.Path, l.Author)})
		}
	}
	for _, l := range prev.Locks {
		if k := lockKey(l); was[k] && !is[k] {
			out = append(out, story{typ: corev1.EventTypeNormal, reason: ReasonUnlocked, msg: fmt.Sprintf("%s lock at %s (%s) lifted", l.Type, l.Path, l.Author)})
		}
	}
	switch {
	case next.Hold != "" && prev.Hold == "":
		out = append(out, story{typ: corev1.EventTypeNormal, reason: ReasonLocked, msg: "held: " + next.Hold})
	case prev.Hold != "" && next.Hold == "":
		out = append(out, story{typ: corev1.EventTypeNormal, reason: ReasonUnlocked, msg: "hold ended: " + prev.Hold})
	}
	if p, q := prev.Pending, next.Pending; p != nil && q != nil && pendingKey(p) == pendingKey(q) && q.Approvals > p.Approvals && q.Approvals < q.Required {
		// Still short: the approval that completes the plan is told as its apply starts.
		var added []string
		for _, a := range q.Approvers {
			if !slices.Contains(p.Approvers, a) {
				added = append(added, a)
			}
		}
		what := "plan " + shortHash(q.PlanHash) + " of revision " + gitsource.ShortRevision(q.Revision)
		if q.Release {
			what = "release of revision " + gitsource.ShortRevision(q.Revision)
		}
		out = append(out, story{typ: corev1.EventTypeNormal, reason: ReasonApproved,
			msg: fmt.Sprintf("%s approved by %s (%d of %d)", what, strings.Join(added, ", "), q.Approvals, q.Required)})
	}
	return out
}

// keyedLocks are the locks of ls placed by people, by lockKey.
func keyedLocks(ls []Lock) map[string]bool {
	out := map[string]bool{}
	for _, l := range ls {
		if l.Type == string(lock.Deploy) && strings.HasPrefix(l.Author, string(identity.Stagehand)+":") {
			continue
		}
		out[lockKey(l)] = true
	}
	return out
}

func lockKey(l Lock) string { return l.Path + " " + l.Type + " " + l.Author }

// pendingKey names a pending plan as Propose's story does.
func pendingKey(p *Pending) string {
	if p.Release {
		return p.PlanHash + " release"
	}
	return p.PlanHash
}

func planHash(p approval.Proposal) string {
	if p.Plan == nil {
		return ""
	}
	return p.Plan.PlanHash
}

// shortHash is a planHash's prefix: its algorithm and twelve digits.
func shortHash(h string) string {
	alg, digest, ok := strings.Cut(h, ":")
	if !ok {
		return gitsource.ShortRevision(h)
	}
	return alg + ":" + gitsource.ShortRevision(digest)
}

// changes names a plan's services and the versions they move to.
func changes(p *reconcile.Plan) string {
	if p == nil || len(p.Changes) == 0 {
		return "no changes listed"
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range p.Changes {
		s := c.Service + " → " + imageTag(c.To)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return strings.Join(out, ", ")
}

// imageTag is the tag (or digest) of an image reference.
func imageTag(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ref
}

// objectRef is the reference the Events of env's object name: with its
// UID, as `kubectl describe` looks them up.
func objectRef(namespace, env string, uid types.UID) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: GVR.GroupVersion().String(), Kind: "Environment", Namespace: namespace, Name: env, UID: uid}
}
