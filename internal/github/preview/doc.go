// Package preview is the Previewer of internal/github's PR previews: BranchPreviewer fetches a pull
// request's head branch from the manifests repository with a read-only git source (a SourceFunc, from
// internal/wire's Builder.BranchSource) and plans every environment of it against the live clusters (a
// PlanFunc, the daemon's planner), each branch in a cache directory of its own under previews/ in
// source.cacheDir, used by one preview at a time and removed when its pull request closes or it goes stale.
//
//	p := preview.New(cfg.Source.CacheDir, cfg.EnvironmentNames(), d.Plan, b.BranchSource)
//	h, _ := github.NewHandler(gh, d, cfg.Source.Branch, github.WithPreviewer(p))
package preview
