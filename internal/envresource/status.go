package envresource

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// The condition types of an Environment.
const (
	// ConditionReady: the environment's manifest at the observed revision
	// resolved and planned, and no fault (git, a target's API server) is
	// being waited out.
	ConditionReady = "Ready"
	// ConditionDeployed: the observed revision is deployed (every service in
	// sync in every target) and its sequence passed; nothing pending,
	// applying, verifying or awaiting release.
	ConditionDeployed = "Deployed"
	// ConditionAwaitingApproval: a plan (or a release) waits for approvals.
	ConditionAwaitingApproval = "AwaitingApproval"
	// ConditionLocked: a deploy lock at, beneath or above the lock path, or
	// an incident rollback's hold, keeps changes back.
	ConditionLocked = "Locked"
	// ConditionDegraded: the last deploy failed, was rejected or rolled
	// back, or the environment cannot be planned.
	ConditionDegraded = "Degraded"
)

// Reasons of the Deployed condition that a wait reads as an end: the
// observed revision will not be deployed without a new revision or a
// person's action.
const (
	ReasonDeployed   = "Deployed"
	ReasonFailed     = "Failed"
	ReasonRejected   = "Rejected"
	ReasonRolledBack = "RolledBack"
)

// Status is the status subresource of an Environment.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	ObservedRevision   string             `json:"observedRevision,omitempty"`
	ShortRevision      string             `json:"shortRevision,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Holder             string             `json:"holder,omitempty"`
	Error              string             `json:"error,omitempty"`
	Services           Services           `json:"services"`
	Pending            *Pending           `json:"pending,omitempty"`
	InFlight           *InFlight          `json:"inFlight,omitempty"`
	LastDeploy         *Deploy            `json:"lastDeploy,omitempty"`
	Sequence           *Sequence          `json:"sequence,omitempty"`
	Locked             bool               `json:"locked"`
	Locks              []Lock             `json:"locks,omitempty"`
	Hold               string             `json:"hold,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Services counts the environment's services by how they compare in their
// targets: a service counts as drifted (changes planned), blocked or a
// problem when it is so in any target, else in sync.
type Services struct {
	Total     int `json:"total"`
	InSync    int `json:"inSync"`
	Drifted   int `json:"drifted"`
	Blocked   int `json:"blocked"`
	Problem   int `json:"problem"`
	Unmanaged int `json:"unmanaged"`
}

// Pending is the plan (or release) awaiting approval.
type Pending struct {
	PlanHash   string    `json:"planHash"`
	Revision   string    `json:"revision"`
	Release    bool      `json:"release,omitempty"`
	Approvals  int       `json:"approvals"`
	Required   int       `json:"required"`
	Approvers  []string  `json:"approvers,omitempty"`
	ProposedAt time.Time `json:"proposedAt,omitzero"`
	// Summary is the PENDING column: "<short revision> <approvals>/<required>".
	Summary string `json:"summary"`
}

// InFlight is the apply under way.
type InFlight struct {
	PlanHash string    `json:"planHash"`
	Revision string    `json:"revision"`
	Started  time.Time `json:"started,omitzero"`
}

// Deploy is the last history entry.
type Deploy struct {
	ID        int64     `json:"id,omitempty"`
	Revision  string    `json:"revision"`
	PlanHash  string    `json:"planHash,omitempty"`
	Result    string    `json:"result"`
	Message   string    `json:"message,omitempty"`
	Approvers []string  `json:"approvers,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
}

// Sequence is the progress of the newest sequence run.
type Sequence struct {
	Revision string `json:"revision"`
	Tasks    int    `json:"tasks"`
	Finished int    `json:"finished"`
	Current  string `json:"current,omitempty"`
	Result   string `json:"result,omitempty"`
	Done     bool   `json:"done"`
}

// Lock is one lock that applies to the environment.
type Lock struct {
	Path      string    `json:"path"`
	Type      string    `json:"type"`
	Author    string    `json:"author,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// Field bounds, as the CRD's schema sets them.
const (
	maxMessage = 4096
	maxList    = 64
)

// Object is what an Environment object holds that its next status builds
// on: its generation and its conditions.
type Object struct {
	Generation int64
	Conditions []metav1.Condition
}

// StatusOf is the status of the environment v shows, for the object obj,
// with phase (the daemon's status.Phase for v). A condition of obj whose
// status did not change keeps its lastTransitionTime; now stamps those that
// changed.
func StatusOf(v *status.Environment, phase status.Phase, obj Object, now time.Time) Status {
	prev := obj.Conditions
	s := Status{
		ObservedGeneration: obj.Generation,
		ObservedRevision:   v.Revision,
		ShortRevision:      gitsource.ShortRevision(v.Revision),
		Phase:              string(phase),
		Holder:             v.Holder,
		Error:              clip(v.Error, maxMessage),
		Hold:               clip(v.PinnedBy, 1024),
	}
	for _, svc := range v.Services {
		s.Services.Total++
		worst := status.StateInSync
		for _, t := range svc.Targets {
			worst = worse(worst, t.State)
		}
		switch worst {
		case status.StateOutOfSync:
			s.Services.Drifted++
		case status.StateBlocked:
			s.Services.Blocked++
		case status.StateProblem:
			s.Services.Problem++
		case status.StateInSync:
			s.Services.InSync++
		}
	}
	s.Services.Unmanaged = len(v.Unmanaged)
	if p := v.Pending; p != nil {
		req := max(p.Required, 1)
		s.Pending = &Pending{PlanHash: p.PlanHash, Revision: p.Revision, Release: p.Release, Approvals: len(p.Approvals), Required: req,
			ProposedAt: p.ProposedAt.UTC(), Summary: fmt.Sprintf("%s %d/%d", gitsource.ShortRevision(p.Revision), len(p.Approvals), req)}
		for i, a := range p.Approvals {
			if i == maxList {
				break
			}
			s.Pending.Approvers = append(s.Pending.Approvers, clip(a.Approver, 512))
		}
	}
	if f := v.InFlight; f != nil {
		s.InFlight = &InFlight{PlanHash: f.PlanHash, Revision: f.Revision, Started: f.Started.UTC()}
	}
	if e := v.LastResult; e != nil {
		s.LastDeploy = &Deploy{ID: e.ID, Revision: e.Revision, PlanHash: e.PlanHash, Result: e.Result, Message: clip(e.Message, maxMessage),
			Started: e.Started.UTC(), Finished: e.Finished.UTC()}
		approvers := e.Approvers
		if len(approvers) == 0 && e.Approver != "" && e.Result != approval.ResultRejected {
			// One approver is kept in Approver alone (a rejection's names who rejected).
			approvers = []string{e.Approver}
		}
		for i, a := range approvers {
			if i == maxList {
				break
			}
			s.LastDeploy.Approvers = append(s.LastDeploy.Approvers, clip(a, 512))
		}
	}
	if r := v.Sequence; r != nil {
		q := &Sequence{Revision: r.Revision, Tasks: len(r.Tasks), Done: r.Done()}
		for _, t := range r.Tasks {
			if t.Status == "finished" {
				q.Finished++
			}
		}
		if i := r.Next(); !q.Done && i < len(r.Tasks) {
			q.Current = r.Tasks[i].Name
		}
		if q.Done {
			q.Result = r.Result
		}
		s.Sequence = q
	}
	for i, l := range v.Locks {
		if i == maxList {
			break
		}
		s.Locks = append(s.Locks, Lock{Path: l.Path, Type: string(l.Type), Author: clip(l.Author, 512), ExpiresAt: l.ExpiresAt.UTC()})
	}
	s.Locked = len(v.Locks) > 0 || v.Pin != nil
	conds := conditions(v, s)
	s.Conditions = make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		c.ObservedGeneration = obj.Generation
		c.Message = clip(c.Message, maxMessage)
		c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		if old := meta.FindStatusCondition(prev, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		s.Conditions = append(s.Conditions, c)
	}
	return s
}

// conditions are v's conditions (without times or generation).
func conditions(v *status.Environment, s Status) []metav1.Condition {
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg}
	}
	var out []metav1.Condition

	// Ready
	switch {
	case v.Revision == "":
		out = append(out, cond(ConditionReady, false, "NotObserved", "no revision of the manifests repository observed yet"))
	case v.Error != "":
		out = append(out, cond(ConditionReady, false, "PlanFailed", v.Error))
	case len(v.Waiting) > 0:
		out = append(out, cond(ConditionReady, false, "Waiting", strings.Join(v.Waiting, "; ")))
	default:
		out = append(out, cond(ConditionReady, true, "Observed", "revision "+gitsource.ShortRevision(v.Revision)+" resolved and planned"))
	}

	// Deployed, and Degraded beside it.
	dep, degraded := deployed(v, s)
	out = append(out, dep)

	// AwaitingApproval
	if p := s.Pending; p != nil {
		what, reason := "plan "+gitsource.ShortRevision(p.PlanHash)+" of revision "+gitsource.ShortRevision(p.Revision), "PlanProposed"
		if p.Release {
			what, reason = "release of revision "+gitsource.ShortRevision(p.Revision), "ReleaseProposed"
		}
		out = append(out, cond(ConditionAwaitingApproval, true, reason, fmt.Sprintf("%s: %d of %d approvals", what, p.Approvals, p.Required)))
	} else {
		out = append(out, cond(ConditionAwaitingApproval, false, "NothingPending", "no plan awaits approval"))
	}

	// Locked
	switch {
	case v.Pin != nil:
		out = append(out, cond(ConditionLocked, true, "Hold", v.PinnedBy))
	case len(v.Locks) > 0:
		var ls []string
		for i, l := range v.Locks {
			if i == 8 {
				ls = append(ls, fmt.Sprintf("and %d more", len(v.Locks)-i))
				break
			}
			ls = append(ls, fmt.Sprintf("%s (%s, %s)", l.Path, l.Type, l.Author))
		}
		out = append(out, cond(ConditionLocked, true, "LockHeld", "locked: "+strings.Join(ls, ", ")))
	case v.LocksError != "":
		out = append(out, metav1.Condition{Type: ConditionLocked, Status: metav1.ConditionUnknown, Reason: "LocksUnreadable", Message: v.LocksError})
	default:
		out = append(out, cond(ConditionLocked, false, "NoLocks", "no lock applies"))
	}
	out = append(out, degraded)
	return out
}

// deployed is the Deployed condition (the observed revision deployed and
// its sequence passed) and the Degraded one.
func deployed(v *status.Environment, s Status) (dep, deg metav1.Condition) {
	no := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: ConditionDeployed, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionFalse, Reason: "Healthy", Message: "the last deploy succeeded or there was none"}
	rev := gitsource.ShortRevision(v.Revision)
	last := v.LastResult
	// A failure at the observed revision (or of the plan rolled back) is
	// an end until a new revision or a person acts.
	if last != nil && last.Revision == v.Revision {
		switch last.Result {
		case approval.ResultFailed, approval.ResultInterrupted:
			deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: fmt.Sprintf("deploy #%d of %s failed: %s", last.ID, rev, last.Message)}
		case approval.ResultRejected:
			deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonRejected, Message: fmt.Sprintf("plan of %s rejected by %s: %s", rev, last.Approver, last.Message)}
		case approval.ResultRolledBack:
			deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonRolledBack, Message: fmt.Sprintf("deploy #%d of %s rolled back: %s", last.ID, rev, last.Message)}
		}
	}
	if rb := v.RolledBack; rb != nil && rb.Revision == v.Revision && deg.Status != metav1.ConditionTrue {
		deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonRolledBack, Message: fmt.Sprintf("%s rolled back: %s", rev, rb.Cause)}
	}
	if v.Error != "" && deg.Status != metav1.ConditionTrue {
		deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: "PlanFailed", Message: v.Error}
	}
	// The phase moves during a pass, before the observation is written at
	// its end (the first pass has none): an apply or a sequence under way
	// says so whatever the revision last observed.
	switch {
	case s.Phase == string(status.PhaseVerifying) && v.Sequence != nil && !v.Sequence.Done():
		// The in-flight record stays until the run ends.
		return no("Verifying", "sequence of "+gitsource.ShortRevision(v.Sequence.Revision)+" running: "+s.Sequence.Current), deg
	case s.Phase == string(status.PhaseRollingBack):
		return no("RollingBack", "rolling back a failed deploy"), deg
	case s.InFlight != nil:
		return no("Applying", "applying "+gitsource.ShortRevision(s.InFlight.Revision)), deg
	case s.Phase == string(status.PhaseApplying):
		return no("Applying", "applying a plan"), deg
	case s.Phase == string(status.PhaseDeferred):
		why := "waiting for the deploy window"
		if len(v.Waiting) > 0 {
			why = strings.Join(v.Waiting, "; ")
		}
		return no("Deferred", why), deg
	case v.Revision == "":
		return no("NotObserved", "no revision observed yet"), deg
	case deg.Status == metav1.ConditionTrue && deg.Reason != "PlanFailed":
		return no(deg.Reason, deg.Message), deg
	case v.Error != "":
		return no("PlanFailed", v.Error), deg
	case s.Pending != nil && s.Pending.Release:
		return no("AwaitingRelease", "revision "+gitsource.ShortRevision(s.Pending.Revision)+" deployed, awaiting release approval"), deg
	case s.Pending != nil:
		return no("AwaitingApproval", fmt.Sprintf("plan of %s awaits approval (%d of %d)", gitsource.ShortRevision(s.Pending.Revision), s.Pending.Approvals, s.Pending.Required)), deg
	case v.Sequence != nil && v.Sequence.Revision == v.Revision && !v.Sequence.Done():
		return no("Verifying", "sequence of "+rev+" running: "+s.Sequence.Current), deg
	case v.Sequence != nil && v.Sequence.Revision == v.Revision && v.Sequence.Result == promote.ResultFail:
		deg = metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: "sequence of " + rev + " failed: " + v.Sequence.Message}
		return no(ReasonFailed, deg.Message), deg
	case s.Services.Blocked > 0:
		return no("Blocked", fmt.Sprintf("%d service(s) blocked by a lock", s.Services.Blocked)), deg
	case s.Services.Problem > 0:
		return no("Problem", fmt.Sprintf("%d service(s) with a problem (no workload, ambiguous container, registry error)", s.Services.Problem)), deg
	case s.Services.Drifted > 0 || v.PlanHash != "":
		return no("Drifted", fmt.Sprintf("%d service(s) differ from revision %s", s.Services.Drifted, rev)), deg
	}
	msg := "revision " + rev + " deployed"
	if last != nil && last.Revision == v.Revision {
		msg = fmt.Sprintf("revision %s deployed (#%d)", rev, last.ID)
	}
	if v.Sequence != nil && v.Sequence.Revision == v.Revision {
		msg += ", sequence " + v.Sequence.Result
	}
	return metav1.Condition{Type: ConditionDeployed, Status: metav1.ConditionTrue, Reason: ReasonDeployed, Message: msg}, deg
}

// worse is the worse of two service states.
func worse(a, b string) string {
	rank := map[string]int{status.StateInSync: 0, "": 0, status.StateOutOfSync: 1, status.StateBlocked: 2, status.StateProblem: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
