package envresource

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// ViewFunc reads an environment as the API shows it (the daemon's
// Environment), with the phase the daemon keeps for it.
type ViewFunc func(ctx context.Context, env string) (*status.Environment, status.Phase, error)

// Hook is what the daemon calls after each pass and decision of env's
// worker (daemon.RecordHook): it reads env's view and writes the
// Environment when it changed. Errors go to onError (nil: dropped); they
// never stop the worker.
func (w *Writer) Hook(view ViewFunc, onError func(env string, err error)) func(ctx context.Context, env, term string, holds func(context.Context) error) {
	return func(ctx context.Context, env, term string, holds func(context.Context) error) {
		v, phase, err := view(ctx, env)
		if err == nil {
			_, err = w.Write(ctx, v, phase, Term{Name: term, Holds: holds})
		}
		if err != nil && onError != nil && ctx.Err() == nil {
			onError(env, err)
		}
	}
}
