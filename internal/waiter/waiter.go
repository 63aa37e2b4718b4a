package waiter

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// Target is what a wait waits for: a revision (a full commit hash or a
// prefix of at least 7 hex digits), or a service at a version, or, with
// neither, the revision the environment observes at the first read.
type Target struct {
	Revision string
	Service  string
	Version  string
}

// The outcomes of a wait that ended.
const (
	Deployed   = "deployed"
	Failed     = "failed"
	Rejected   = "rejected"
	RolledBack = "rolled-back"
	Superseded = "superseded"
)

// Verdict is what one read says.
type Verdict struct {
	// Done is true once the wait is over; Outcome then says how (Deployed,
	// or a failure: Failed, Rejected, RolledBack, Superseded).
	Done    bool
	Outcome string
	// Message says where the deploy is (progress) or how it ended.
	Message string
}

// Code is the exit code of a wait that ended with v: 0 deployed, 1 otherwise.
func (v Verdict) Code() int {
	if v.Outcome == Deployed {
		return 0
	}
	return 1
}

// Judge follows one wait over successive reads.
type Judge struct {
	t Target
	// seen is true once the target was observed (the revision, or the
	// service at the version).
	seen  bool
	first string // the revision observed at the first read
}

// New returns the judge of a wait for t.
func New(t Target) (*Judge, error) {
	switch {
	case t.Revision != "" && t.Service != "":
		return nil, fmt.Errorf("waiting for revision %q and service %q: want one or the other", t.Revision, t.Service)
	case t.Revision != "" && (len(t.Revision) < 7 || len(t.Revision) > 64 || strings.Trim(strings.ToLower(t.Revision), "0123456789abcdef") != ""):
		return nil, fmt.Errorf("revision %q: want a commit hash (at least 7 hex digits)", t.Revision)
	case t.Service != "" && t.Version == "":
		return nil, fmt.Errorf("service %q: want NAME=VERSION", t.Service)
	}
	t.Revision = strings.ToLower(t.Revision)
	return &Judge{t: t}, nil
}

// is reports whether rev is the target revision.
func (j *Judge) is(rev string) bool {
	return rev != "" && j.t.Revision != "" && strings.HasPrefix(rev, j.t.Revision)
}

// Judge reads one view of the environment.
func (j *Judge) Judge(v *status.Environment) Verdict {
	if j.first == "" {
		j.first = v.Revision
		if j.t.Revision == "" && j.t.Service == "" && v.Revision != "" {
			j.t.Revision = v.Revision
		}
	}
	if j.t.Service != "" {
		return j.service(v)
	}
	return j.revision(v)
}

// revision judges a wait for a revision.
func (j *Judge) revision(v *status.Environment) Verdict {
	want := gitsource.ShortRevision(j.t.Revision)
	if e := entryFor(v, j.is); e != nil && !j.is(v.Revision) {
		// Recorded, and the environment moved on since.
		if e.Result == approval.ResultSucceeded {
			return Verdict{Done: true, Outcome: Deployed, Message: fmt.Sprintf("%s deployed (#%d), since followed by %s", want, e.ID, gitsource.ShortRevision(v.Revision))}
		}
		return ended(e, want)
	}
	if j.is(v.Revision) {
		j.seen = true
		return j.deployed(v, want)
	}
	pendingOrApplying := (v.Pending != nil && j.is(v.Pending.Revision)) || (v.InFlight != nil && j.is(v.InFlight.Revision))
	if pendingOrApplying {
		j.seen = true
		return Verdict{Message: fmt.Sprintf("%s: plan pending or applying while %s is observed", want, gitsource.ShortRevision(v.Revision))}
	}
	if j.seen || (j.first != "" && v.Revision != j.first) {
		return Verdict{Done: true, Outcome: Superseded, Message: fmt.Sprintf("%s superseded by %s before it was deployed", want, gitsource.ShortRevision(v.Revision))}
	}
	return Verdict{Message: fmt.Sprintf("waiting for %s to be observed (now %s)", want, orNone(gitsource.ShortRevision(v.Revision)))}
}

// service judges a wait for a service's version.
func (j *Judge) service(v *status.Environment) Verdict {
	want := j.t.Service + "=" + j.t.Version
	version, ok, at := "", false, false
	for _, s := range v.Services {
		if s.Name != j.t.Service {
			continue
		}
		version, ok = s.Version, true
		// The service's version, or (a manifest without one) its containers' tag.
		at = s.Version == j.t.Version
		for _, c := range s.Desired {
			if s.Version == "" && c.DockerTag == j.t.Version {
				version, at = c.DockerTag, true
			}
		}
		if version == "" && len(s.Desired) > 0 {
			version = s.Desired[0].DockerTag
		}
	}
	switch {
	case at:
		j.seen = true
		return j.deployed(v, want+" at "+gitsource.ShortRevision(v.Revision))
	case j.seen:
		return Verdict{Done: true, Outcome: Superseded, Message: fmt.Sprintf("%s superseded: %s asks for %s=%s", want, gitsource.ShortRevision(v.Revision), j.t.Service, orNone(version))}
	case !ok && v.Revision != "" && v.Error == "":
		return Verdict{Message: fmt.Sprintf("waiting for %s: %s has no service %s", want, gitsource.ShortRevision(v.Revision), j.t.Service)}
	}
	return Verdict{Message: fmt.Sprintf("waiting for %s (now %s)", want, orNone(version))}
}

// deployed judges the observed revision by its Deployed condition.
func (j *Judge) deployed(v *status.Environment, what string) Verdict {
	st := envresource.StatusOf(v, "", envresource.Object{}, time.Time{})
	return byCondition(st.Conditions, what)
}

// byCondition judges the observed revision by the Deployed condition among
// conds.
func byCondition(conds []metav1.Condition, what string) Verdict {
	c := meta.FindStatusCondition(conds, envresource.ConditionDeployed)
	switch {
	case c == nil:
		return Verdict{Message: what + ": no Deployed condition"}
	case c.Status == metav1.ConditionTrue:
		return Verdict{Done: true, Outcome: Deployed, Message: what + ": " + c.Message}
	case c.Reason == envresource.ReasonFailed:
		return Verdict{Done: true, Outcome: Failed, Message: what + ": " + c.Message}
	case c.Reason == envresource.ReasonRejected:
		return Verdict{Done: true, Outcome: Rejected, Message: what + ": " + c.Message}
	case c.Reason == envresource.ReasonRolledBack:
		return Verdict{Done: true, Outcome: RolledBack, Message: what + ": " + c.Message}
	}
	return Verdict{Message: what + ": " + c.Reason + ": " + c.Message}
}

// Object reads one status of the environment's Environment object (as
// `reconciler wait --kubeconfig` watches it), by the rules Judge reads the
// API's view with. The object carries the last deploy only, not the
// history, nor the services' versions: a wait for a service's version is
// refused, and a revision deployed before the last deploy (and since
// followed by others) is not recognised: it is waited for until the timeout.
func (j *Judge) Object(st *envresource.Status) (Verdict, error) {
	if j.t.Service != "" {
		return Verdict{}, fmt.Errorf("waiting for service %s=%s: the Environment object carries no service versions", j.t.Service, j.t.Version)
	}
	if j.first == "" {
		j.first = st.ObservedRevision
		if j.t.Revision == "" && st.ObservedRevision != "" {
			j.t.Revision = st.ObservedRevision
		}
	}
	want := gitsource.ShortRevision(j.t.Revision)
	if want == "" {
		return Verdict{Message: "waiting for a revision to be observed"}, nil
	}
	if d := st.LastDeploy; d != nil && j.is(d.Revision) && !j.is(st.ObservedRevision) {
		// Recorded, and the environment moved on since.
		if d.Result == approval.ResultSucceeded {
			return Verdict{Done: true, Outcome: Deployed, Message: fmt.Sprintf("%s deployed (#%d), since followed by %s", want, d.ID, gitsource.ShortRevision(st.ObservedRevision))}, nil
		}
		return ended(&approval.Entry{ID: d.ID, Revision: d.Revision, Result: d.Result, Message: d.Message}, want), nil
	}
	if j.is(st.ObservedRevision) {
		j.seen = true
		return byCondition(st.Conditions, want), nil
	}
	if (st.Pending != nil && j.is(st.Pending.Revision)) || (st.InFlight != nil && j.is(st.InFlight.Revision)) {
		j.seen = true
		return Verdict{Message: fmt.Sprintf("%s: plan pending or applying while %s is observed", want, gitsource.ShortRevision(st.ObservedRevision))}, nil
	}
	if j.seen || (j.first != "" && st.ObservedRevision != j.first) {
		return Verdict{Done: true, Outcome: Superseded, Message: fmt.Sprintf("%s superseded by %s before it was deployed", want, gitsource.ShortRevision(st.ObservedRevision))}, nil
	}
	return Verdict{Message: fmt.Sprintf("waiting for %s to be observed (now %s)", want, orNone(gitsource.ShortRevision(st.ObservedRevision)))}, nil
}

// ended is the verdict of a history entry that did not succeed.
func ended(e *approval.Entry, what string) Verdict {
	out := Failed
	switch e.Result {
	case approval.ResultRejected:
		out = Rejected
	case approval.ResultRolledBack:
		out = RolledBack
	}
	msg := fmt.Sprintf("%s %s (#%d)", what, e.Result, e.ID)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return Verdict{Done: true, Outcome: out, Message: msg}
}

// entryFor is the newest history entry whose revision matches: from the
// history when the view has it, else the last result, which is all the
// API's environment view carries (its history is served apart). The last
// result is enough for the moment that matters: an apply recorded (its
// entry the newest) before its pass ends and the environment observes its
// revision.
func entryFor(v *status.Environment, match func(string) bool) *approval.Entry {
	entries := v.History
	if len(entries) == 0 && v.LastResult != nil {
		entries = []approval.Entry{*v.LastResult}
	}
	for i := range entries {
		if match(entries[i].Revision) {
			return &entries[i]
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
