package github

import (
	"context"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// PlanFunc plans environment env of snapshot s against the live clusters without changing anything (the
// daemon's planner: resolve the manifest, then reconcile's Plan on the environment's targets).
type PlanFunc func(ctx context.Context, s gitsource.Snapshot, env string) (*reconcile.Plan, error)

// BranchPreviewer is the Previewer of PR previews: it fetches the pull request's head branch from the
// manifests repository with pkg/gitsource (the source's URL and credentials) and plans every environment.
type BranchPreviewer struct {
	src  config.Source
	envs []string
	plan PlanFunc
	opts []gitsource.Option
}

var _ Previewer = (*BranchPreviewer)(nil)

// NewBranchPreviewer previews envs of branches of the repository src names, planning with plan.
func NewBranchPreviewer(src config.Source, envs []string, plan PlanFunc, opts ...gitsource.Option) *BranchPreviewer {
	return &BranchPreviewer{src: src, envs: envs, plan: plan, opts: opts}
}

// Preview fetches headRef and plans each environment of it. When the branch has moved past headSHA it
// returns nothing: the delivery for the newer head follows.
func (p *BranchPreviewer) Preview(ctx context.Context, headRef, headSHA string) ([]Preview, error) {
	cfg := p.src
	cfg.Branch, cfg.Schedule, cfg.Verify = headRef, "", nil // read-only: nothing of a preview is applied
	if cfg.Interval.Duration <= 0 {
		cfg.Interval.Duration = time.Minute
	}
	src, err := wire.Source(cfg, wire.WithSourceOptions(p.opts...))
	if err != nil {
		return nil, fmt.Errorf("configuring source for branch %s: %w", headRef, err)
	}
	snap, err := src.Poll(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetching branch %s: %w", headRef, err)
	}
	if snap.Revision != headSHA {
		return nil, nil
	}
	out := make([]Preview, 0, len(p.envs))
	for _, env := range p.envs {
		plan, err := p.plan(ctx, snap, env)
		out = append(out, Preview{Environment: env, Plan: plan, Err: err})
	}
	return out, nil
}
