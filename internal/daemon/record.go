package daemon

import (
	"context"
	"sync"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// recorder calls one environment's RecordHook: after each pass and
// decision, in the worker (tell), and when the environment's phase moves
// during one (moved: Applying as the patches go out, Verifying while the
// sequence's tasks run, AwaitingRelease, RollingBack), from a goroutine of
// its own (follow) so that an apply never waits for the hook. Calls never
// overlap and each reads the records as they are when it begins, so moves
// that come faster than the hook coalesce into one call that sees the
// newest.
type recorder struct {
	hook  RecordHook
	env   string
	store *state.Store
	mu    sync.Mutex
	moves chan struct{}
}

func newRecorder(hook RecordHook, env string, store *state.Store) *recorder {
	return &recorder{hook: hook, env: env, store: store, moves: make(chan struct{}, 1)}
}

// tell calls the hook now (nothing when there is none or ctx ended).
func (r *recorder) tell(ctx context.Context) {
	if r.hook == nil || ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// This call reads the newest records: a move asked before it is told.
	select {
	case <-r.moves:
	default:
	}
	store := r.store
	r.hook(ctx, r.env, store.Term(), func(ctx context.Context) error { return store.Holds(ctx, r.env) })
}

// moved asks follow's goroutine to call the hook; it never blocks.
func (r *recorder) moved() {
	if r.hook == nil {
		return
	}
	select {
	case r.moves <- struct{}{}:
	default:
	}
}

// follow calls the hook after each move until ctx ends or stop is called;
// stop waits for a call under way. store is the worker's in this term
// (fenced by its token): every call, tell's too, names its term.
func (r *recorder) follow(ctx context.Context, store *state.Store) (stop func()) {
	r.mu.Lock()
	r.store = store
	r.mu.Unlock()
	if r.hook == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.moves:
				r.tell(ctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
