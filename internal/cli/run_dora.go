package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/promotion"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// doraCounter counts the DORA metrics (internal/dora) from each
// environment's worker: its hook is a daemon.RecordHook, told after each
// pass and decision, that counts the deploys recorded since the
// environment's mark (ConfigMap stagehand-dora of the state namespace).
// The counter is made once the daemon (its metrics registry, its git
// source) exists: set, before the daemon runs, by start.
type doraCounter struct {
	log     logr.Logger
	counter *dora.Counter
	history dora.HistoryFunc
}

// hook is the daemon.RecordHook; it does nothing until start.
func (c *doraCounter) hook(ctx context.Context, env, term string, holds func(context.Context) error) {
	if c.counter == nil {
		return
	}
	c.counter.Hook(c.history, func(env string, err error) {
		c.log.Error(err, "counting deploys", "environment", env)
	})(ctx, env, term, holds)
}

// start makes the counter over d, registering the metrics on d's registry.
func (c *doraCounter) start(b *wire.Builder, d *daemon.Daemon) error {
	client, err := b.StateClient()
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	counter, err := dora.NewCounter(d.Metrics().Registry, dora.NewMarks(client, b.Config().State.Namespace), doraOptions(b, d)...)
	if err != nil {
		return err
	}
	c.counter, c.history = counter, d.History
	return nil
}

// recordHooks is one daemon.RecordHook that tells each of hooks in turn.
func recordHooks(hooks ...daemon.RecordHook) daemon.RecordHook {
	return func(ctx context.Context, env, term string, holds func(context.Context) error) {
		for _, h := range hooks {
			h(ctx, env, term, holds)
		}
	}
}

// doraOptions are the options of the DORA figures of `reconciler run`: the
// history's clock (the API server's), dora.rollbackWindow, and the git
// source that dates each deploy's first commit.
func doraOptions(b *wire.Builder, d *daemon.Daemon) []dora.Option {
	opts := []dora.Option{dora.WithClock(d.Now)}
	if w := b.Config().DORA.RollbackWindow.Duration; w > 0 {
		opts = append(opts, dora.WithRollbackWindow(w))
	}
	if src := d.Source(); src != nil {
		opts = append(opts, dora.WithCommits(src))
	}
	return opts
}

// doraReporter is the reporter the API and the page compute reports with.
func doraReporter(b *wire.Builder, d *daemon.Daemon) (*dora.Reporter, error) {
	return dora.NewReporter(doraOptions(b, d)...)
}

// promotions says what each promotion between adjacent stages of
// pipeline.yaml, at the newest revision the daemon fetched, waits for
// (internal/promotion): the stages resolved at that revision, their
// histories and the later stages' locks, as the daemon reads them.
func promotions(b *wire.Builder, d *daemon.Daemon) func(context.Context) []status.Promotion {
	root, mopts := b.Config().Source.Root, b.ManifestOptions()
	var (
		mu    sync.Mutex
		rev   string
		pl    *promote.Pipeline
		heads map[string]*manifest.Environment
	)
	return func(ctx context.Context) []status.Promotion {
		snap, ok := d.Source().Latest()
		if !ok {
			return nil
		}
		mu.Lock()
		if snap.Revision != rev {
			rev, heads = snap.Revision, map[string]*manifest.Environment{}
			pl, _ = promote.Load(snap.FS, root) // none, or one that does not parse: no promotions shown
			if pl != nil {
				for _, st := range pl.Stages {
					if e, err := manifest.Resolve(ctx, manifest.Repo{FS: snap.FS, Root: root}, st.Name, mopts...); err == nil {
						heads[st.Name] = e
					}
				}
			}
			if ctx.Err() != nil {
				rev = "" // cut short: resolved again by the next caller
			}
		}
		p, hs := pl, heads
		mu.Unlock()
		if p == nil {
			return nil
		}
		stage := func(name string) (promotion.Stage, bool) {
			v, err := d.Environment(ctx, name)
			if err != nil {
				return promotion.Stage{}, false
			}
			h, err := d.History(ctx, name)
			if err != nil {
				return promotion.Stage{}, false
			}
			return promotion.Stage{Head: hs[name], Revision: snap.Revision, History: h, Locks: v.Locks}, true
		}
		return promotion.Waits(p, stage, d.Now())
	}
}
