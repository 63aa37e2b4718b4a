package daemon

import (
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Parts builds, once per process, what the daemon runs on: internal/wire's
// Builder is one (the daemon imports no builder).
type Parts interface {
	Store() (*state.Store, error)
	StateClock() *clock.Remote
	AllTargets() (map[string][]reconcile.Target, error)
	LockService() (*lock.Service, error)
	Reconciler() (*reconcile.Reconciler, error)
	Source() (*gitsource.Source, error)
	// Pushes is nil when pushes do not reach this process (the source is
	// only polled).
	Pushes() (Pushes, error)
	ManifestOptions() []manifest.Option
	// Tracing is the process's tracer provider (off unless configured).
	Tracing() (*tracing.Provider, error)
}

// PartsOf returns the options that give New what b builds: the state store
// and its API server's clock, the targets, the lock service, the
// reconciler, the git source, where pushes arrive, the manifest options,
// and the deploy tracer of the process's tracer provider.
func PartsOf(b Parts) ([]Option, error) {
	st, err := b.Store()
	if err != nil {
		return nil, err
	}
	targets, err := b.AllTargets()
	if err != nil {
		return nil, err
	}
	svc, err := b.LockService()
	if err != nil {
		return nil, err
	}
	rec, err := b.Reconciler()
	if err != nil {
		return nil, err
	}
	src, err := b.Source()
	if err != nil {
		return nil, err
	}
	pushes, err := b.Pushes()
	if err != nil {
		return nil, err
	}
	tp, err := b.Tracing()
	if err != nil {
		return nil, err
	}
	opts := []Option{WithStore(st, b.StateClock()), WithTargets(targets), WithLockService(svc), WithReconciler(rec),
		WithSource(src), WithManifestOptions(b.ManifestOptions()...), WithTracing(tp.Deploys())}
	if pushes != nil {
		opts = append(opts, WithPushes(pushes))
	}
	return opts, nil
}
