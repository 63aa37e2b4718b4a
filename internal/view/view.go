package view

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// canaryReadTimeout bounds the reads of an apply's Flagger Canaries in a
// status view: a target slow to answer leaves them out, not the view.
const canaryReadTimeout = 2 * time.Second

// Holders names who holds each environment's Lease
// (leaderElection.perEnvironment: internal/lease's Shard).
type Holders interface {
	HolderOf(ctx context.Context, env string) (string, error)
}

// Config is what the views read.
type Config struct {
	// Config is the reconciler's configuration: the environments, their
	// targets and lock paths.
	Config *config.Config
	// Store is the state store every replica answers from.
	Store *state.Store
	// Clock is the state cluster's API server's clock, which the deploy
	// windows are judged on.
	Clock *clock.Remote
	// Calendars are each environment's deploy windows (nil: always open).
	Calendars map[string]*policy.Calendar
	// Targets are each environment's targets, where the Flagger Canaries of
	// an apply in flight are read.
	Targets map[string][]reconcile.Target
	// Locks is the lock service whose locks an environment's view lists.
	Locks *lock.Service
	// Holders, when set, names each environment's holder.
	Holders Holders
	// Deliveries records the webhook deliveries that reached an approval
	// path.
	Deliveries *state.Deliveries
}

// Views answers the reads of the API and the web page (api.Backend's
// readers, approval.Deliveries); the Daemon embeds it.
type Views struct {
	c        Config
	envNames []string
}

// New makes the views of c.
func New(c Config) *Views {
	return &Views{c: c, envNames: c.Config.EnvironmentNames()}
}

var _ approval.Deliveries = (*Views)(nil)

// Environment returns env as the API shows it, read from the Store (so every
// replica answers the same).
func (vs *Views) Environment(ctx context.Context, env string) (*status.Environment, error) {
	ec, ok := vs.c.Config.Environments[env]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, vs.envNames)
	}
	st, err := vs.c.Store.Load(ctx, env)
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
	if vs.c.Holders != nil {
		if v.Holder, err = vs.c.Holders.HolderOf(ctx, env); err != nil {
			return nil, err
		}
	}
	if len(st.Status) > 0 {
		if err := json.Unmarshal(st.Status, &v.Observation); err != nil {
			return nil, fmt.Errorf("decoding status of environment %q: %w", env, err)
		}
	}
	if verdict := vs.c.Calendars[env].Judge(vs.c.Clock.Now()); st.Phase == status.PhaseDeferred && !verdict.Open {
		v.Waiting = append(v.Waiting, verdict.Message())
	}
	if cal := vs.c.Calendars[env]; cal != nil {
		x := cal.Explain(vs.c.Clock.Now())
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
			v.Waiting = append(v.Waiting, reconcile.CanaryProgress(cctx, vs.c.Targets[env], changes)...)
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
		if v.Locks, err = vs.envLocks(ctx, ec.LockPath); err != nil {
			v.LocksError = err.Error()
		}
	}
	return v, nil
}

// envLocks returns the unexpired locks at, beneath and above path.
func (vs *Views) envLocks(ctx context.Context, path string) ([]lock.Lock, error) {
	beneath, err := vs.c.Locks.List(ctx, path)
	if err != nil {
		return []lock.Lock{}, err
	}
	var above []lock.Lock
	for _, p := range lock.Prefixes(path) {
		if p == path {
			continue
		}
		if l, err := vs.c.Locks.Get(ctx, p); err == nil {
			above = append(above, l)
		}
	}
	now := vs.c.Locks.Now()
	out := []lock.Lock{}
	for _, l := range append(above, beneath...) {
		if !l.Expired(now) {
			out = append(out, l)
		}
	}
	return out, nil
}

// History returns env's history, newest first, each entry with its resolved
// manifest; an error wrapping approval.ErrUnknownEnvironment for an
// environment not in the configuration. Any replica answers from the Store.
func (vs *Views) History(ctx context.Context, env string) ([]approval.Entry, error) {
	if _, ok := vs.c.Config.Environments[env]; !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, vs.envNames)
	}
	h, err := vs.c.Store.History(ctx, env)
	if err != nil {
		return nil, err
	}
	if h == nil {
		h = []approval.Entry{}
	}
	return h, nil
}

// HistoryEntry returns env's history entry numbered id, with its resolved
// manifest: the versions that ran (or were to run) at that point. The error
// wraps approval.ErrUnknownEnvironment or approval.ErrUnknownEntry.
func (vs *Views) HistoryEntry(ctx context.Context, env string, id int64) (*approval.Entry, error) {
	h, err := vs.History(ctx, env)
	if err != nil {
		return nil, err
	}
	return approval.FindEntry(h, env, id)
}

// FirstDelivery records a webhook delivery that reached an approval path
// (approval.Deliveries) in the record every replica shares
// (state.Deliveries, ConfigMap stagehand-deliveries) and reports whether it
// is new: a delivery whose ID or body was recorded before, by this replica
// or another, before a restart or after, is not.
func (vs *Views) FirstDelivery(ctx context.Context, dl approval.Delivery) (bool, error) {
	return vs.c.Deliveries.First(ctx, dl)
}

// ForgetDelivery removes a delivery recorded by FirstDelivery whose
// handling failed before it changed anything (approval.Deliveries).
func (vs *Views) ForgetDelivery(ctx context.Context, dl approval.Delivery) error {
	return vs.c.Deliveries.Forget(ctx, dl)
}

// Now is the time on the state cluster's API server's clock, which every
// time the daemon records is on (the local clock until its first response).
func (vs *Views) Now() time.Time { return vs.c.Clock.Now() }
