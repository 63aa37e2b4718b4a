package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The roles a worker is given, grouped by what they are (built in one
// place, Daemon.workerDeps): where revisions come from (source), what plans,
// applies and restores in the targets (reconciler), and what the
// environment's manifest is at a revision (manifests). The state store, the
// gate and the clock are given as they are.

// source is the manifests repository as a worker reads it: the Daemon's
// snapshots over its git source.
type source interface {
	// Latest is the newest snapshot the leader has seen.
	Latest() (gitsource.Snapshot, bool)
	// Poll asks the remote for the newest now (and hands a new one to
	// every worker).
	Poll(ctx context.Context) (gitsource.Snapshot, error)
	// At is the snapshot of an earlier fetched revision (a pending plan's,
	// kept at a newer revision that changes nothing here: keep.go).
	At(rev string) (gitsource.Snapshot, error)
	// Status is the source's health, for the faults the status names.
	Status() gitsource.Status
	// Descends reports whether rev descends from ancestor; unless
	// source.allowRewrite, a plan whose revision does not descend from the
	// last applied one needs an approval even in a skipConfirmation
	// environment.
	Descends(ctx context.Context, rev, ancestor string) (bool, error)
}

// reconciler plans the environment against its targets, applies a plan
// (planning again and refusing a changed one) and restores what an apply
// replaced: pkg/reconcile's Reconciler.
type reconciler interface {
	Plan(ctx context.Context, req reconcile.Request) (*reconcile.Plan, error)
	Apply(ctx context.Context, req reconcile.Request, planHash string, opts ...reconcile.Option) (*reconcile.Result, error)
	Restore(ctx context.Context, req reconcile.Request, changes []reconcile.Change, reason string, opts ...reconcile.Option) (*reconcile.Result, error)
}

// manifests is the environment's manifest as a worker reads it.
type manifests interface {
	// Resolve resolves the manifest in a snapshot, with the pin of st (the
	// state a pass or decision read; nil: read it) applied.
	Resolve(ctx context.Context, s gitsource.Snapshot, st *state.EnvState) (*manifest.Environment, error)
	// Notes says what a proposal shows beside its plan (a rollback's hold
	// and pin, see pin.go).
	Notes(ctx context.Context, st *state.EnvState) []string
}

// envManifests are env's manifests as the Daemon resolves them, with an
// incident rollback's pin applied, and the notes of its holds and pins
// (pin.go).
type envManifests struct {
	d             *Daemon
	env, lockPath string
}

func (m envManifests) Resolve(ctx context.Context, s gitsource.Snapshot, st *state.EnvState) (*manifest.Environment, error) {
	envM, err := m.d.resolve(ctx, s, m.env)
	if err != nil {
		return nil, err
	}
	return m.pinned(ctx, envM, st)
}
