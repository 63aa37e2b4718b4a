package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

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
