package wire

import (
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Reconciler builds the reconciler of the registry: and workloads: sections,
// followed by the options of WithReconcileOptions (locks, author).
func Reconciler(cfg *config.Config, opts ...Option) (*reconcile.Reconciler, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring reconciler: %w", err)
	}
	return reconciler(cfg, o.reconcileOpts)
}

// reconciler builds the reconciler of cfg with extra after the options
// derived from the configuration.
func reconciler(cfg *config.Config, extra []reconcile.Option) (*reconcile.Reconciler, error) {
	ropts := []reconcile.Option{
		reconcile.WithSelectorLabel(cfg.Workloads.SelectorLabel),
		reconcile.WithVerifyDigests(cfg.Registry.VerifyDigests == nil || *cfg.Registry.VerifyDigests),
		reconcile.WithPinDigests(cfg.Registry.PinDigests == nil || *cfg.Registry.PinDigests),
		reconcile.WithInsecureRegistries(cfg.Registry.Insecure...),
		reconcile.WithRolloutTimeout(cfg.Workloads.RolloutTimeout.Duration),
	}
	if n := cfg.Workloads.Concurrency; n > 0 {
		ropts = append(ropts, reconcile.WithConcurrency(n))
	}
	regOpts, err := registryOptions(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("configuring reconciler: %w", err)
	}
	ropts = append(ropts, regOpts...)
	r, err := reconcile.New(append(ropts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("configuring reconciler: %w", err)
	}
	return r, nil
}

// ManifestOptions returns the pkg/manifest options of the manifest: section
// (manifest.allowUnknownKeys), for everything that resolves or edits the
// manifests: the daemon, plan and apply, and prbot.
func ManifestOptions(m config.Manifest) []manifest.Option {
	if m.AllowUnknownKeys {
		return []manifest.Option{manifest.AllowUnknownKeys()}
	}
	return nil
}
