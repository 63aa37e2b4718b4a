package prbot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// LockLister is what a LockChecker may do as well: report, keyed by lock
// path, the locks forbidding an action at prefix, at any prefix of it and
// beneath it (pkg/lock's Checker has it; so has LockClient). With it the bot
// sees the locks of a stage's targets and services and the stage's rollback
// hold (at <lockPath>/hold); without it only the stage's lock path and its
// prefixes.
type LockLister interface {
	BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error)
}

// botActions are the action types a bot's pull request is checked as: it
// is automation that ends in a deploy, so a lock forbidding either stops it.
// A rollback hold forbids automation only, so it stops the bots and lets the
// reconciler apply what is merged.
var botActions = []lock.Type{lock.Deploy, lock.Automation}

// lockScope is what a bot's pull request moves: the services of the stage
// at lockPath (nil: the stage as a whole, before the services are known).
type lockScope struct {
	lockPath string
	services []string
}

// lockGate is what stops the bot's pull requests: the locks and holds of
// the lock service (WithLocks) on a stage's lock path, as pipeline.yaml
// gives it, its targets and the services a pull request moves.
type lockGate struct {
	locks LockChecker        // nil: nothing blocks
	repo  *remote.Repository // for pipeline.yaml's lock paths
}

// stageLockPath is the lockPath pipeline.yaml gives env ("" without pipeline or lock path).
func (g *lockGate) stageLockPath(ctx context.Context, env string) (string, error) {
	pl, err := g.repo.Pipeline(ctx, g.repo.Base())
	if err != nil || pl == nil {
		return "", err
	}
	if s, ok := pl.Stage(env); ok {
		return s.LockPath, nil
	}
	return "", nil
}

// blocking returns, sorted and without repeats, the messages of the locks
// that stop the bot opening, updating or merging a pull request moving the
// services of scope: a lock on the stage's lock path or a prefix of it, on
// one of its targets (<lockPath>/<target>; the rollback hold at
// <lockPath>/hold counts as one) and on <lockPath>/<target>/<service> for
// each service of the scope.
func (g *lockGate) blocking(ctx context.Context, scope lockScope) ([]string, error) {
	if g.locks == nil || scope.lockPath == "" {
		return nil, nil
	}
	services := map[string]bool{}
	for _, s := range scope.services {
		services[lock.Segment(s)] = true
	}
	msgs := map[string]bool{}
	for _, t := range botActions {
		byPath, err := g.within(ctx, scope.lockPath, string(t))
		if err != nil {
			return nil, fmt.Errorf("checking locks on %s: %w", scope.lockPath, err)
		}
		for p, ms := range byPath {
			if !covers(scope.lockPath, p, services) {
				continue
			}
			for _, m := range ms {
				msgs[m] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(msgs)), nil
}

// within asks the checker for the locks at, above and beneath prefix,
// or only at and above it when it cannot list.
func (g *lockGate) within(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	if l, ok := g.locks.(LockLister); ok {
		return l.BlockingWithin(ctx, prefix, lockType)
	}
	msgs, err := g.locks.Blocking(ctx, prefix, lockType)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	return map[string][]string{prefix: msgs}, nil
}

// covers reports whether a lock at path stops moving services (lock path
// segments) of the stage at lockPath: path is lockPath, a prefix of it, one
// segment beneath it (a target, or the hold), or a target's service among
// services.
func covers(lockPath, path string, services map[string]bool) bool {
	if path == lockPath || strings.HasPrefix(lockPath, path+"/") {
		return true
	}
	rel, ok := strings.CutPrefix(path, lockPath+"/")
	if !ok {
		return false
	}
	segs := strings.Split(rel, "/")
	switch len(segs) {
	case 1:
		return true
	case 2:
		return services[segs[1]]
	}
	return false
}

// BlockingWithin returns, keyed by lock path, a message for each lock that
// forbids lockType at prefix, at a prefix of it or beneath it: the
// reconciler's GET /api/v1/check/{prefix} and GET /api/v1/locks?path=prefix.
func (r restLocks) BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error) {
	t := lock.Type(lockType)
	above, err := r.c.Check(ctx, prefix, t, true)
	if err != nil {
		return nil, err
	}
	beneath, err := r.c.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	seen := map[string]bool{}
	now := r.now()
	for i, l := range append(above, beneath...) {
		if seen[l.Path] || (i >= len(above) && !l.Blocks(t, now)) {
			continue
		}
		seen[l.Path] = true
		out[l.Path] = append(out[l.Path], l.BlockingMessage(time.UTC))
	}
	return out, nil
}
