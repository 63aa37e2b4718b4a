package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// canaryReadTimeout bounds the reads of an apply's Flagger Canaries in a
// status view: a target slow to answer leaves them out, not the view.
const canaryReadTimeout = 2 * time.Second

// Environment returns env as the API shows it, read from the Store (so every
// replica answers the same).
func (vw *views) Environment(ctx context.Context, env string) (*status.Environment, error) {
	ec, ok := vw.cfg.Environments[env]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, vw.envNames)
	}
	st, err := vw.store.Load(ctx, env)
	if err != nil {
		return nil, err
	}
	v := &status.Environment{Name: env, Phase: st.Phase, LockPath: ec.LockPath, Pending: st.Pending, InFlight: st.InFlight, Sequence: st.Sequence, Pin: st.Pin,
		RolledBack: st.Failed}
	if st.Pin != nil {
		v.PinnedBy = st.Pin.Message()
	}

	for _, t := range ec.Targets {
		v.Targets = append(v.Targets, status.Target{Name: t.Name, Namespace: t.Namespace, Context: t.Context})
	}
	// The resolved manifests are served one entry at a time (HistoryEntry).
	for _, e := range st.Shown() {
		v.History = append(v.History, e.Summary())
	}
	if len(v.History) > 0 {
		v.LastResult = &v.History[0]
	}
	if vw.shard != nil {
		if v.Holder, err = vw.shard.HolderOf(ctx, env); err != nil {
			return nil, err
		}
	}
	if len(st.Status) > 0 {
		if err := json.Unmarshal(st.Status, &v.Observation); err != nil {
			return nil, fmt.Errorf("decoding status of environment %q: %w", env, err)
		}
	}
	if verdict := vw.calendars[env].Judge(vw.clock.Now()); st.Phase == status.PhaseDeferred && !verdict.Open {
		v.Waiting = append(v.Waiting, verdict.Message())
	}
	if cal := vw.calendars[env]; cal != nil {
		x := cal.Explain(vw.clock.Now())
		v.Windows = &x
	}
	if r := st.Sequence; r != nil && r.AwaitingRelease() {
		v.Waiting = append(v.Waiting, "waiting for release approval of "+approval.ShortRevision(r.Revision))
	}
	// An apply in flight waiting for Flagger says where each canary's
	// analysis stands, read from the targets by whichever replica answers.
	if f := st.InFlight; f != nil {
		var changes []reconcile.Change
		if json.Unmarshal(f.Changes, &changes) == nil {
			cctx, cancel := context.WithTimeout(ctx, canaryReadTimeout)
			v.Waiting = append(v.Waiting, reconcile.CanaryProgress(cctx, vw.targets[env], changes)...)
			cancel()
		}
	}
	if v.Services == nil {
		v.Services = []status.Service{}
	}
	if st.HistoryDropped > 0 {
		if v.Truncated == nil {
			v.Truncated = &status.Truncation{}
		}
		v.Truncated.HistoryDropped = st.HistoryDropped
	}
	v.Locks = []lock.Lock{}
	if ec.LockPath != "" {
		if v.Locks, err = vw.envLocks(ctx, ec.LockPath); err != nil {
			v.LocksError = err.Error()
		}
	}
	return v, nil
}

// envLocks returns the unexpired locks at, beneath and above path.
func (vw *views) envLocks(ctx context.Context, path string) ([]lock.Lock, error) {
	beneath, err := vw.lockSvc.List(ctx, path)
	if err != nil {
		return []lock.Lock{}, err
	}
	var above []lock.Lock
	for _, p := range lock.Prefixes(path) {
		if p == path {
			continue
		}
		if l, err := vw.lockSvc.Get(ctx, p); err == nil {
			above = append(above, l)
		}
	}
	now := vw.lockSvc.Now()
	out := []lock.Lock{}
	for _, l := range append(above, beneath...) {
		if !l.Expired(now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// writeStatus records what a pass observed at s, when it differs from the
// last write; endPass is its one caller.
func (w *worker) writeStatus(ctx context.Context, s gitsource.Snapshot, o *observation) {
	st := status.Observe(s, o.envM, o.plan, w.statusTargets, o.err)
	st.Waiting = w.waiting(o.plan)
	cmp, err := json.Marshal(st)
	if err == nil && bytes.Equal(cmp, w.lastStatus) {
		return
	}
	st.ObservedAt = w.now().UTC()
	raw, rerr := json.Marshal(st)
	if err = errors.Join(err, rerr); err != nil {
		w.metrics.Fail(w.env, reasonState)
		w.log.Error(err, "encoding status", "environment", w.env)
		return
	}
	if err := w.store.SetStatus(ctx, w.env, raw); err != nil {
		w.metrics.Fail(w.env, reasonState)
		w.log.Error(err, "recording status", "environment", w.env)
		return
	}
	w.lastStatus = cmp
}

// waiting names the faults env is waiting out: the source failing (its
// last good revision is what is planned), the gate refused for a rate
// limit (until it ends), and targets plan could not reach.
func (w *worker) waiting(plan *reconcile.Plan) []string {
	var out []string
	if rl := w.tell.limited(); rl != nil {
		out = append(out, fmt.Sprintf("%s rate limited until %s", rl.Service, rl.Until.UTC().Format(time.RFC3339)))
	}
	if w.source != nil {
		if src := w.source.Status(); src.Failures > 0 {
			out = append(out, fmt.Sprintf("source unreachable since %s: %s", src.FailingSince.UTC().Format(time.RFC3339), src.LastError))
		}
	}
	if plan != nil {
		for _, t := range plan.UnreachableTargets() {
			for _, pr := range plan.Problems {
				if pr.Unreachable && pr.Target == t {
					out = append(out, "API server of target "+t+" unreachable: "+pr.Message)
					break
				}
			}
		}
	}
	return out
}
