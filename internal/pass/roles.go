package pass

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The roles a pass is given, grouped by what they are (the daemon builds
// them once per environment): where revisions come from (Source), what
// plans, applies and restores in the targets (Reconciler), and what the
// environment's manifest is at a revision (Manifests).

// Source is the manifests repository as a worker reads it: the daemon's
// snapshots over its git source.
type Source interface {
	// Latest is the newest snapshot the leader has seen.
	Latest() (gitsource.Snapshot, bool)
	// Poll asks the remote for the newest now (and hands a new one to
	// every worker).
	Poll(ctx context.Context) (gitsource.Snapshot, error)
	// At is the snapshot of an earlier fetched revision (a pending plan's,
	// kept at a newer revision that changes nothing here).
	At(rev string) (gitsource.Snapshot, error)
	// Status is the source's health, for the faults the status names.
	Status() gitsource.Status
	// Descends reports whether rev descends from ancestor; unless
	// source.allowRewrite, a plan whose revision does not descend from the
	// last applied one needs an approval even in a skipConfirmation
	// environment.
	Descends(ctx context.Context, rev, ancestor string) (bool, error)
}

// Reconciler plans the environment against its targets, applies a plan
// (planning again and refusing a changed one) and restores what an apply
// replaced: pkg/reconcile's Reconciler.
type Reconciler interface {
	Plan(ctx context.Context, req reconcile.Request) (*reconcile.Plan, error)
	Apply(ctx context.Context, req reconcile.Request, planHash string, opts ...reconcile.Option) (*reconcile.Result, error)
	Restore(ctx context.Context, req reconcile.Request, undo reconcile.Undo, opts ...reconcile.Option) (*reconcile.Result, error)
}

// Manifests is the environment's manifest as a worker reads it.
type Manifests interface {
	// Resolve resolves the manifest in a snapshot, with the pin of st (the
	// state a pass or decision read; nil: read it) applied.
	Resolve(ctx context.Context, s gitsource.Snapshot, st *state.EnvState) (*manifest.Environment, error)
	// Notes says what a proposal shows beside its plan (a rollback's hold
	// and pin).
	Notes(ctx context.Context, st *state.EnvState) []string
}
