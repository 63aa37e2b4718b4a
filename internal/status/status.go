package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// maxLayoutBytes bounds the layout kept in the status ConfigMap.
const maxLayoutBytes = 256 << 10

// Service states in a ServiceTarget.
const (
	StateInSync    = "in-sync"     // live images are the desired ones
	StateOutOfSync = "out-of-sync" // changes are planned (pending or being applied)
	StateBlocked   = "blocked"     // a deploy lock blocks a change
	StateProblem   = "problem"     // no workload, ambiguous container, registry error
)

// Observation is what the leader last observed of an environment; every
// replica serves it from the Store.
type Observation struct {
	Revision         string    `json:"revision"`
	RevisionTime     time.Time `json:"revisionTime,omitzero"`
	ObservedAt       time.Time `json:"observedAt"`
	SkipConfirmation bool      `json:"skipConfirmation"`
	// PlanHash is the hash of the changes still to apply ("" when in sync).
	PlanHash  string                `json:"planHash,omitempty"`
	Services  []Service             `json:"services"`
	Unmanaged []reconcile.Unmanaged `json:"unmanaged,omitempty"`
	Warnings  []string              `json:"warnings,omitempty"`
	// Error is why the environment could not be resolved or planned at Revision.
	Error string `json:"error,omitempty"`
	// Waiting names the faults the environment is waiting out, each with
	// when it began: the git source unreachable, a target's API server
	// unreachable; and what an apply in flight waits for: a Flagger
	// canary's analysis ("Deployment web on a: canary analysing: 3 of 5
	// iterations"). Empty when there are none.
	Waiting []string         `json:"waiting,omitempty"`
	Layout  *manifest.Layout `json:"layout,omitempty"`
	// LayoutOmitted is true when the layout was too large to keep.
	LayoutOmitted bool `json:"layoutOmitted,omitempty"`
	// Truncated says what was left out so that the state fits its
	// ConfigMap (nil when nothing was).
	Truncated *Truncation `json:"truncated,omitempty"`
}

// Truncation is what was left out of an environment's state so that it fits
// the ConfigMap that keeps it: the oldest history entries, then the layout,
// then the per-service detail (desired containers, images and changes per
// target, unmanaged workloads). The pending plan and the in-flight apply are
// never left out.
type Truncation struct {
	// HistoryDropped counts the history entries dropped, oldest first.
	HistoryDropped int `json:"historyDropped,omitempty"`
	// LayoutOmitted is true when the layout was left out.
	LayoutOmitted bool `json:"layoutOmitted,omitempty"`
	// ServiceDetailOmitted is true when the per-service detail was left out;
	// each target's state, locks and problems are kept.
	ServiceDetailOmitted bool `json:"serviceDetailOmitted,omitempty"`
}

// Service is one service: what the manifest wants and, per target, how
// the live workloads compare.
type Service struct {
	Name    string               `json:"name"`
	Version string               `json:"version,omitempty"`
	Source  string               `json:"source"`
	Desired []manifest.Container `json:"desired"`
	Targets []ServiceTarget      `json:"targets"`
}

// ServiceTarget is one service in one target. Changes list the live
// image (From) and the desired one (To) of every container that differs;
// Images has desired and live for every manifest container.
type ServiceTarget struct {
	Target    string             `json:"target"`
	Namespace string             `json:"namespace"`
	State     string             `json:"state"`
	Images    []Image            `json:"images"`
	Changes   []reconcile.Change `json:"changes,omitempty"`
	Locks     []string           `json:"locks,omitempty"`
	Problems  []string           `json:"problems,omitempty"`
}

// Image is desired against live for one manifest container in one
// target. For a container to change (planned, pending or blocked), Desired
// and Live are the full images of the plan's change (To and From), one entry
// per workload. For one in sync, both are the manifest's reference
// (dockerName:dockerTag[@dockerDigest]): the workload runs it, under its own
// registry prefix. Live is "" when a problem (no workload, ambiguous
// container, registry error) leaves it unknown.
type Image struct {
	DockerName string `json:"dockerName"`
	// Workload is "Kind/name" of the workload a change is for ("" when in sync).
	Workload string `json:"workload,omitempty"`
	Desired  string `json:"desired"`
	Live     string `json:"live"`
}

// Environment is one environment as the API shows it.
type Environment struct {
	Name     string   `json:"name"`
	LockPath string   `json:"lockPath"`
	Targets  []Target `json:"targets"`
	// Holder is the replica holding the environment's Lease with
	// leaderElection.perEnvironment ("" when nobody does, or with one leader).
	Holder string `json:"holder,omitempty"`
	// Phase is where the environment is in its lifecycle (Idle,
	// AwaitingApproval, Applying, Verifying, AwaitingRelease, RollingBack,
	// Failed), as the daemon keeps it in the state.
	Phase Phase `json:"phase"`
	Observation
	Pending    *approval.Pending  `json:"pending"`
	InFlight   *approval.InFlight `json:"inFlight,omitempty"`
	LastResult *approval.Entry    `json:"lastResult"`
	// Sequence is the newest run of the environment's delivery sequence:
	// which task is running or finished, with which result.
	Sequence *sequence.State `json:"sequence,omitempty"`
	// Pin is the incident rollback whose versions the reconciler keeps
	// until its pull request merges, and PinnedBy says so: "pinned by
	// rollback #7" (both empty without one).
	Pin      *approval.Pin `json:"pin,omitempty"`
	PinnedBy string        `json:"pinnedBy,omitempty"`
	// RolledBack is the last revision whose apply was rolled back
	// automatically: it is not applied again until a new revision arrives.
	RolledBack *approval.RolledBack `json:"rolledBack,omitempty"`
	// Locks are the unexpired locks at the lock path, beneath it (targets,
	// services) and above it (a lock on a prefix blocks deploys too).
	Locks      []lock.Lock      `json:"locks"`
	LocksError string           `json:"locksError,omitempty"`
	History    []approval.Entry `json:"history,omitempty"`
	// Windows is how the environment's deploy windows judge now, on the API server's clock: open or
	// closed, which window decides, and when that changes (nil: the environment has no windows).
	Windows *policy.Explanation `json:"windows,omitempty"`
}

// Target is a configured target.
type Target struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Context   string `json:"context,omitempty"`
}

// Planned is what planning an environment at a revision gave: the
// resolved environment Env (nil: not resolved), its Plan (nil: not
// planned), or why either failed (Err).
type Planned struct {
	Env  *manifest.Environment
	Plan *reconcile.Plan
	Err  error
}

// Observe is what planning env at revision s found (p): the desired images
// of every service against the live ones in each of targets as p.Plan (nil:
// not planned) compares them, or why it could not be resolved or planned
// (p.Err).
func Observe(s gitsource.Snapshot, p Planned, targets []config.Target) Observation {
	envM, plan, perr := p.Env, p.Plan, p.Err
	st := Observation{Revision: s.Revision, RevisionTime: s.Time.UTC(), Services: []Service{}}
	if perr != nil {
		st.Error = perr.Error()
	}
	if envM == nil {
		return st
	}
	st.SkipConfirmation = envM.SkipConfirmation
	for _, w := range envM.Warnings {
		st.Warnings = append(st.Warnings, w.Error())
	}
	if b, err := json.Marshal(envM.Layout); err == nil && len(b) <= maxLayoutBytes {
		st.Layout = envM.Layout
	} else {
		st.LayoutOmitted = true
	}
	if plan != nil && !plan.Empty() {
		st.PlanHash = plan.PlanHash
	}
	if plan != nil && plan.HistoryRewritten != "" {
		st.Warnings = append(st.Warnings, fmt.Sprintf("history rewritten: %s does not descend from %s, the last revision applied", s.Revision, plan.HistoryRewritten))
	}
	for _, svc := range envM.Services {
		sv := Service{Name: svc.Name, Version: svc.Version, Source: svc.Source, Desired: svc.Containers}
		if sv.Desired == nil {
			sv.Desired = []manifest.Container{}
		}
		for _, t := range targets {
			sv.Targets = append(sv.Targets, targetStatus(svc, t, plan))
		}
		st.Services = append(st.Services, sv)
	}
	if plan != nil {
		st.Unmanaged = plan.Unmanaged
	}
	return st
}

// targetStatus compares svc with the live workloads of target t, as plan
// found them (nil plan: not planned, state unknown).
func targetStatus(svc manifest.Service, t config.Target, plan *reconcile.Plan) ServiceTarget {
	ts := ServiceTarget{Target: t.Name, Namespace: t.Namespace, State: StateInSync}
	if plan == nil {
		ts.State, ts.Images = "", []Image{}
		return ts
	}
	for _, c := range plan.Changes {
		if c.Service == svc.Name && c.Target == t.Name {
			ts.Changes = append(ts.Changes, c)
			ts.State = StateOutOfSync
		}
	}
	for _, b := range plan.Blocked {
		if b.Service == svc.Name && b.Target == t.Name {
			ts.Changes = append(ts.Changes, b.Change)
			ts.Locks = append(ts.Locks, b.Locks...)
			ts.State = StateBlocked
		}
	}
	for _, p := range plan.Problems {
		if p.Service == svc.Name && p.Target == t.Name {
			ts.Problems = append(ts.Problems, p.Message)
			ts.State = StateProblem
		}
	}
	ts.Images = images(svc.Containers, ts.Changes, ts.State == StateProblem)
	return ts
}

// images pairs each manifest container with its changes in one target (by
// the image repository ending in dockerName, as the plan maps them); a
// container without a change is in sync, unless the target has a problem
// for the service, in which case its live image is unknown.
func images(containers []manifest.Container, changes []reconcile.Change, problem bool) []Image {
	out := []Image{}
	for _, c := range containers {
		matched := false
		for _, ch := range changes {
			if repo := repository(ch.To); repo == c.DockerName || strings.HasSuffix(repo, "/"+c.DockerName) {
				out = append(out, Image{DockerName: c.DockerName, Workload: ch.Kind + "/" + ch.Name, Desired: ch.To, Live: ch.From})
				matched = true
			}
		}
		if matched {
			continue
		}
		ref := c.DockerName + ":" + c.DockerTag
		if c.DockerDigest != "" {
			ref += "@" + c.DockerDigest
		}
		live := ref
		if problem {
			live = ""
		}
		out = append(out, Image{DockerName: c.DockerName, Desired: ref, Live: live})
	}
	return out
}

// repository is an image reference without its tag and digest.
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}
