package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
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

// Status is what the leader last observed of an environment; every replica
// serves it from the Store.
type Status struct {
	Revision         string    `json:"revision"`
	RevisionTime     time.Time `json:"revisionTime,omitzero"`
	ObservedAt       time.Time `json:"observedAt"`
	SkipConfirmation bool      `json:"skipConfirmation"`
	// PlanHash is the hash of the changes still to apply ("" when in sync).
	PlanHash  string                `json:"planHash,omitempty"`
	Services  []ServiceView         `json:"services"`
	Unmanaged []reconcile.Unmanaged `json:"unmanaged,omitempty"`
	Warnings  []string              `json:"warnings,omitempty"`
	// Error is why the environment could not be resolved or planned at Revision.
	Error  string           `json:"error,omitempty"`
	Layout *manifest.Layout `json:"layout,omitempty"`
	// LayoutOmitted is true when the layout was too large to keep.
	LayoutOmitted bool `json:"layoutOmitted,omitempty"`
}

// ServiceView is one service: what the manifest wants and, per target, how
// the live workloads compare.
type ServiceView struct {
	Name    string                `json:"name"`
	Version string                `json:"version,omitempty"`
	Source  string                `json:"source"`
	Desired []manifest.Container  `json:"desired"`
	Targets []ServiceTargetStatus `json:"targets"`
}

// ServiceTargetStatus is one service in one target. Changes list the live
// image (From) and the desired one (To) of every container that differs;
// Images has desired and live for every manifest container.
type ServiceTargetStatus struct {
	Target    string             `json:"target"`
	Namespace string             `json:"namespace"`
	State     string             `json:"state"`
	Images    []ImageStatus      `json:"images"`
	Changes   []reconcile.Change `json:"changes,omitempty"`
	Locks     []string           `json:"locks,omitempty"`
	Problems  []string           `json:"problems,omitempty"`
}

// ImageStatus is desired against live for one manifest container in one
// target. For a container to change (planned, pending or blocked), Desired
// and Live are the full images of the plan's change (To and From), one entry
// per workload. For one in sync, both are the manifest's reference
// (dockerName:dockerTag[@dockerDigest]): the workload runs it, under its own
// registry prefix. Live is "" when a problem (no workload, ambiguous
// container, registry error) leaves it unknown.
type ImageStatus struct {
	DockerName string `json:"dockerName"`
	// Workload is "Kind/name" of the workload a change is for ("" when in sync).
	Workload string `json:"workload,omitempty"`
	Desired  string `json:"desired"`
	Live     string `json:"live"`
}

// EnvironmentView is one environment as the API shows it.
type EnvironmentView struct {
	Name     string       `json:"name"`
	LockPath string       `json:"lockPath"`
	Targets  []TargetView `json:"targets"`
	Status
	Pending    *approval.Pending  `json:"pending"`
	InFlight   *approval.InFlight `json:"inFlight,omitempty"`
	LastResult *approval.Entry    `json:"lastResult"`
	// Locks are the unexpired locks at the lock path, beneath it (targets,
	// services) and above it (a lock on a prefix blocks deploys too).
	Locks      []lock.Lock      `json:"locks"`
	LocksError string           `json:"locksError,omitempty"`
	History    []approval.Entry `json:"history,omitempty"`
}

// TargetView is a configured target.
type TargetView struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Context   string `json:"context,omitempty"`
}

// Environment returns env as the API shows it, read from the Store (so every
// replica answers the same).
func (d *Daemon) Environment(ctx context.Context, env string) (*EnvironmentView, error) {
	ec, ok := d.cfg.Environments[env]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, d.envNames)
	}
	st, err := d.store.Load(ctx, env)
	if err != nil {
		return nil, err
	}
	v := &EnvironmentView{Name: env, LockPath: ec.LockPath, Pending: st.Pending, InFlight: st.InFlight, History: st.History}
	for _, t := range ec.Targets {
		v.Targets = append(v.Targets, TargetView{Name: t.Name, Namespace: t.Namespace, Context: t.Context})
	}
	if len(st.History) > 0 {
		v.LastResult = &st.History[0]
	}
	if len(st.Status) > 0 {
		if err := json.Unmarshal(st.Status, &v.Status); err != nil {
			return nil, fmt.Errorf("decoding status of environment %q: %w", env, err)
		}
	}
	if v.Services == nil {
		v.Services = []ServiceView{}
	}
	v.Locks = []lock.Lock{}
	if ec.LockPath != "" {
		if v.Locks, err = d.envLocks(ctx, ec.LockPath); err != nil {
			v.LocksError = err.Error()
		}
	}
	return v, nil
}

// envLocks returns the unexpired locks at, beneath and above path.
func (d *Daemon) envLocks(ctx context.Context, path string) ([]lock.Lock, error) {
	beneath, err := d.lockSvc.List(ctx, path)
	if err != nil {
		return []lock.Lock{}, err
	}
	var above []lock.Lock
	for _, p := range lock.Prefixes(path) {
		if p == path {
			continue
		}
		if l, err := d.lockSvc.Get(ctx, p); err == nil {
			above = append(above, l)
		}
	}
	now := d.lockSvc.Now()
	out := []lock.Lock{}
	for _, l := range append(above, beneath...) {
		if !l.Expired(now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// writeStatus records what a pass observed, when it differs from the last write.
func (w *worker) writeStatus(ctx context.Context, s gitsource.Snapshot, envM *manifest.Environment, plan *reconcile.Plan, perr error) {
	st := buildStatus(s, envM, plan, w.d.cfg.Environments[w.env].Targets, perr)
	cmp, err := json.Marshal(st)
	if err != nil {
		return
	}
	if bytes.Equal(cmp, w.lastStatus) {
		return
	}
	st.ObservedAt = time.Now().UTC()
	raw, err := json.Marshal(st)
	if err != nil {
		return
	}
	if err := w.d.store.SetStatus(ctx, w.env, raw); err != nil {
		w.d.metrics.fail(w.env, "state")
		w.d.log.Error(err, "recording status", "environment", w.env)
		return
	}
	w.lastStatus = cmp
}

func buildStatus(s gitsource.Snapshot, envM *manifest.Environment, plan *reconcile.Plan, targets []config.Target, perr error) Status {
	st := Status{Revision: s.Revision, RevisionTime: s.Time.UTC(), Services: []ServiceView{}}
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
	for _, svc := range envM.Services {
		sv := ServiceView{Name: svc.Name, Version: svc.Version, Source: svc.Source, Desired: svc.Containers}
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
func targetStatus(svc manifest.Service, t config.Target, plan *reconcile.Plan) ServiceTargetStatus {
	ts := ServiceTargetStatus{Target: t.Name, Namespace: t.Namespace, State: StateInSync}
	if plan == nil {
		ts.State, ts.Images = "", []ImageStatus{}
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
func images(containers []manifest.Container, changes []reconcile.Change, problem bool) []ImageStatus {
	out := []ImageStatus{}
	for _, c := range containers {
		matched := false
		for _, ch := range changes {
			if repo := repository(ch.To); repo == c.DockerName || strings.HasSuffix(repo, "/"+c.DockerName) {
				out = append(out, ImageStatus{DockerName: c.DockerName, Workload: ch.Kind + "/" + ch.Name, Desired: ch.To, Live: ch.From})
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
		out = append(out, ImageStatus{DockerName: c.DockerName, Desired: ref, Live: live})
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
